import os
import signal
import sys


def on_term(signum, frame):
    sys.exit(0)


signal.signal(signal.SIGTERM, on_term)


def main(worker):
    done = False
    while not done:
        result = worker.run_once()
        done = result.status == "completed"
        if os.path.exists("STOP"):
            break
