def run_all(calls, registry):
    results = []
    for call in calls:
        fn = registry.get(call.name)
        if fn is None:
            continue
        results.append(fn(**call.args))
    return results
