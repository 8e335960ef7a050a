MAX_DEPTH = 4


def solve(task, llm, depth=0):
    if depth > MAX_DEPTH:
        return None
    result = llm(task)
    if result.is_complete:
        return result
    return solve(result.refined_task, llm, depth + 1)
