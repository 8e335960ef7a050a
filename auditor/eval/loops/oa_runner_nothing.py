from agents import Agent, ModelSettings, Runner

agent = Agent(name="research", tools=[web_search], model_settings=ModelSettings(max_tokens=500))


async def research(topic):
    result = await Runner.run(agent, f"Research {topic}; stop when done")
    return result.final_output
