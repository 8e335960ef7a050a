import asyncio

from agents import Agent, Runner

writer = Agent(
    name="writer",
    instructions="Draft the release notes, then call publish.",
    tools=[publish],
    tool_use_behavior="stop_on_first_tool",
)


async def main():
    result = await Runner.run(writer, "release 2.3")
    print(result.final_output)


asyncio.run(main())
