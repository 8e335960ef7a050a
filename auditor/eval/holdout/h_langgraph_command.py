from langgraph.graph import StateGraph, END


def review(state):
    if state["score"] >= 0.9:
        return END
    return "revise"


builder = StateGraph(Draft)
builder.add_node("write", write)
builder.add_node("review", review_node)
builder.add_conditional_edges("review", review)
builder.add_edge("write", "review")
graph = builder.compile()
graph.invoke({"topic": "fixed points"})
