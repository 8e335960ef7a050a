def apply_plan(agent):
    for step in range(10):
        plan = agent.propose()
        print(plan)
        answer = input("Apply this step? [y/N] ")
        if answer.strip().lower() != "y":
            break
        agent.apply(plan)
