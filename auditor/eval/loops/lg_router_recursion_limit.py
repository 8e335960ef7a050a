from langgraph.graph import END, StateGraph


def should_continue(state):
    last = state["messages"][-1]
    if not last.tool_calls:
        return END
    if state["revisions"] >= 3:
        return END
    return "tools"


graph = StateGraph(AgentState)
graph.add_node("agent", call_model)
graph.add_node("tools", run_tools)
graph.add_conditional_edges("agent", should_continue)
graph.add_edge("tools", "agent")
graph.set_entry_point("agent")
app = graph.compile()
result = app.invoke({"messages": [], "revisions": 0}, config={"recursion_limit": 40})
