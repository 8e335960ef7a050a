from smolagents import InferenceClientModel, ToolCallingAgent

agent = ToolCallingAgent(tools=[search_tool], model=InferenceClientModel())
answer = agent.run("What is the boiling point of water on Everest?")
