from llm import complete, run_tools

# TODO: stop when done, and add max_turns
history = []
while True:
    out = complete(history)
    history.append(out)
    # if out.done: break
    print("max_turns exceeded? no such thing here; the loop is done when you kill it")
    history.extend(run_tools(out))
