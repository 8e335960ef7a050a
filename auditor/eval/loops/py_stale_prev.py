MAX_ERRORS = 5


def refine(doc, model, load_state):
    prev_state = load_state()
    errors = 0
    while True:
        try:
            state = model.revise(doc)
        except Exception:
            errors += 1
            if errors >= MAX_ERRORS:
                break
            continue
        if state == prev_state:
            break
        doc = state
    return doc
