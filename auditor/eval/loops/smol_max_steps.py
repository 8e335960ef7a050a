from smolagents import CodeAgent, InferenceClientModel


def tests_pass(final_answer, memory):
    return run_suite().ok


agent = CodeAgent(
    tools=[],
    model=InferenceClientModel(),
    max_steps=12,
    final_answer_checks=[tests_pass],
)
agent.run("Make the test suite green")
