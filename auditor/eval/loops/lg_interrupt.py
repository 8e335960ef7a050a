from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import StateGraph

graph = StateGraph(State)
graph.add_node("plan", plan)
graph.add_node("tools", tools)
graph.add_edge("plan", "tools")
graph.add_edge("tools", "plan")
graph.set_entry_point("plan")
app = graph.compile(checkpointer=MemorySaver(), interrupt_before=["tools"])
app.invoke({"goal": goal}, config={"configurable": {"thread_id": "1"}, "recursion_limit": 30})
