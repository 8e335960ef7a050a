import asyncio

from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat


async def main(coder, critic):
    termination = TextMentionTermination("TERMINATE") | MaxMessageTermination(20)
    team = RoundRobinGroupChat([coder, critic], termination_condition=termination)
    await team.run(task="Write a haiku about loops")


asyncio.run(main(make_coder(), make_critic()))
