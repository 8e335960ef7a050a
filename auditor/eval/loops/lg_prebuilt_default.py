from langgraph.prebuilt import create_react_agent

agent = create_react_agent(model, tools=[search, write_file])
# config={"recursion_limit": 10} would be nice
out = agent.invoke({"messages": [{"role": "user", "content": "write the report"}]})
