from crewai import Agent, Crew, Task

writer = Agent(role="writer", goal="Write the post", backstory="Blogger", max_rpm=10)
task = Task(description="Write about agent loops", expected_output="800 words", agent=writer)
Crew(agents=[writer], tasks=[task], verbose=True).kickoff()
