def serve(client, tools):
    messages = []
    while True:
        try:
            resp = client.respond(messages, tools=tools)
        except KeyboardInterrupt:
            print("press Ctrl-C again? no, we keep going")
            continue
        if resp.tool_calls is None:
            return resp.text
        messages += tools.run(resp.tool_calls)
