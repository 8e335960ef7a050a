from collections import deque


def drain(tasks, agent):
    queue = deque(tasks)
    attempts = {}
    while queue:
        task = queue.popleft()
        ok = agent.handle(task)
        if not ok:
            attempts[task] = attempts.get(task, 0) + 1
            if attempts[task] < 3:
                queue.append(task)
