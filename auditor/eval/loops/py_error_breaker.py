import threading

stop_event = threading.Event()


def worker_loop(step):
    consecutive_failures = 0
    while True:
        if stop_event.is_set():
            break
        try:
            step()
            consecutive_failures = 0
        except Exception as exc:
            consecutive_failures += 1
            print(f"step failed: {exc}")
            if consecutive_failures >= 3:
                raise
