from tenacity import retry, stop_after_attempt


@retry(stop=stop_after_attempt(3))
def call_model(client, messages):
    return client.complete(messages)


def solve(client, question):
    messages = [question]
    while True:
        resp = call_model(client, messages)
        messages.append(resp)
        if "FINAL ANSWER" in resp:
            return resp
