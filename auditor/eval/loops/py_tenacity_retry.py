from tenacity import retry, stop_after_attempt, stop_after_delay, wait_exponential


@retry(stop=stop_after_attempt(5) | stop_after_delay(120), wait=wait_exponential(min=1, max=30))
def run_job(agent, job):
    agent.reset()
    agent.perform(job)
    agent.verify(job)


if __name__ == "__main__":
    run_job(make_agent(), load_job())
