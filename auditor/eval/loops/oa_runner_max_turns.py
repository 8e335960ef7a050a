from agents import Agent, Runner

triage = Agent(name="triage", instructions="Route the ticket.", tools=[lookup, escalate_ticket])
result = Runner.run_sync(triage, "customer cannot log in", max_turns=8)
print(result.final_output)
