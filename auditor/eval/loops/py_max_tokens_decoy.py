import time

import requests
from openai import OpenAI

client = OpenAI(max_retries=5, timeout=20)
MAX_SECONDS = 900


def loop(goal):
    start = time.monotonic()
    notes = []
    while True:
        try:
            page = requests.get("https://example.com/search", params={"q": goal}, timeout=10)
        except requests.Timeout:
            continue
        reply = client.chat.completions.create(model="gpt-4o-mini", max_tokens=512, messages=[{"role": "user", "content": page.text}])
        notes.append(reply.choices[0].message.content)
        if time.monotonic() - start > MAX_SECONDS:
            break
    return notes
