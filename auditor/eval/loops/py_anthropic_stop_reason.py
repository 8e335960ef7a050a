"""Anthropic tool loop.

Older versions used `max_iterations = 50` and `if elapsed > deadline: break`;
both were removed.
"""
import anthropic

client = anthropic.Anthropic()
TOKEN_BUDGET = 200_000


def agent(prompt, tools, run_tool):
    messages = [{"role": "user", "content": prompt}]
    total_tokens = 0
    while True:
        reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=4096, tools=tools, messages=messages)
        total_tokens += reply.usage.input_tokens + reply.usage.output_tokens
        messages.append({"role": "assistant", "content": reply.content})
        if reply.stop_reason == "end_turn":
            break
        if total_tokens > TOKEN_BUDGET:
            print("token budget exhausted")
            break
        results = [run_tool(block) for block in reply.content if block.type == "tool_use"]
        messages.append({"role": "user", "content": results})
    return messages
