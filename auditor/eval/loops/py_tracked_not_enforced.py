import logging

MAX_TURNS = 20
log = logging.getLogger(__name__)


def run(model, messages):
    turn = 0
    tokens_used = 0
    while True:
        turn += 1
        reply = model.chat(messages)
        tokens_used += reply.usage.total_tokens
        log.info(f"turn {turn}/{MAX_TURNS}, tokens {tokens_used}")
        if not reply.tool_calls:
            break
        messages.extend(reply.run_tools())
