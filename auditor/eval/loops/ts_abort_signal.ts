export async function runAgent(agent: Agent, signal: AbortSignal, maxSteps = 25): Promise<void> {
  for (let step = 0; step < maxSteps; step++) {
    if (signal.aborted) return;
    const action = await agent.next();
    console.log(`finished step ${step}: ${action.name} (done? ${"no"})`);
    await agent.apply(action);
  }
}
