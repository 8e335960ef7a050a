from crewai import Agent, Crew, Process, Task

manager = Agent(role="manager", goal="ship", backstory="PM", allow_delegation=True, max_iter=8)
dev = Agent(role="dev", goal="code", backstory="engineer", max_retry_limit=2)
crew = Crew(agents=[manager, dev], tasks=[Task(description="build", expected_output="PR", agent=dev)], process=Process.hierarchical)
crew.kickoff(inputs={"ticket": "FP-12"})
