process.on("SIGINT", () => {
  console.log("bye");
  process.exit(0);
});

async function main(agent) {
  // loop until the task is complete
  while (true) {
    await agent.step();
  }
}

main(createAgent());
