package agent

import "context"

const maxTurns = 16

func Run(ctx context.Context, client *Client, params Params) error {
	for turn := 0; turn < maxTurns; turn++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		resp, err := client.Messages.New(ctx, params)
		if err != nil {
			return err
		}
		if resp.StopReason == "end_turn" {
			return nil
		}
		params = params.With(resp)
	}
	return nil
}
