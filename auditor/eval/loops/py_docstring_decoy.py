"""Fetch with retries.

Example of what NOT to do:

    while True:
        if done: break
        max_iterations = 10
"""
import requests

MAX_ATTEMPTS = 4


def fetch(url):
    for attempt in range(MAX_ATTEMPTS):
        resp = requests.get(url, timeout=5)
        if resp.ok:
            return resp.json()
    raise RuntimeError("""gave up after max attempts; deadline passed""")
