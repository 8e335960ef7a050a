import json
from openai import OpenAI

client = OpenAI(max_retries=3)
MAX_TURNS = 12


def run(task: str, tools: list, registry: dict) -> str:
    messages = [{"role": "user", "content": task}]
    for turn in range(MAX_TURNS):
        resp = client.chat.completions.create(
            model="gpt-4o", messages=messages, tools=tools, max_tokens=1024, timeout=30
        )
        msg = resp.choices[0].message
        messages.append(msg)
        if not msg.tool_calls:
            return msg.content
        for call in msg.tool_calls:
            result = registry[call.function.name](**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": str(result)})
    return "gave up"
