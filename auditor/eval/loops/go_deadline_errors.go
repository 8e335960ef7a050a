package worker

import "time"

func Loop(step func() error, maxFailures int) error {
	deadline := time.Now().Add(10 * time.Minute)
	failures := 0
	for time.Now().Before(deadline) {
		if err := step(); err != nil {
			failures++
			if failures >= maxFailures {
				return err
			}
			continue
		}
		failures = 0
	}
	return nil
}
