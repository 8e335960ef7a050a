from crewai import Agent, Crew, Task

analyst = Agent(
    role="analyst",
    goal="Find the root cause",
    backstory="SRE",
    max_iter=15,
    max_execution_time=300,
)
task = Task(description="Investigate the outage", expected_output="A report", agent=analyst)
crew = Crew(agents=[analyst], tasks=[task])
crew.kickoff()
