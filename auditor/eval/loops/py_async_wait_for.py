import asyncio


async def agent_loop(planner):
    last_plan = None
    while True:
        plan = await planner.next_plan()
        if plan == last_plan:
            break
        last_plan = plan
        await planner.execute(plan)


if __name__ == "__main__":
    asyncio.run(asyncio.wait_for(agent_loop(make_planner()), timeout=900))
