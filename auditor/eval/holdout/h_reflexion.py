def reflexion(task, actor, evaluator, max_trials=5):
    reflections = []
    for trial in range(max_trials):
        attempt = actor(task, reflections)
        verdict = evaluator(task, attempt)
        if verdict.passed:
            return attempt
        reflections.append(verdict.feedback)
    return None
