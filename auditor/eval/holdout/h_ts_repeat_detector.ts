export async function drive(agent: Agent): Promise<void> {
  const recent: string[] = [];
  while (true) {
    const action = await agent.decide();
    const key = JSON.stringify(action);
    if (recent.includes(key)) {
      console.warn("repeated action, stopping");
      break;
    }
    recent.push(key);
    await agent.act(action);
  }
}
