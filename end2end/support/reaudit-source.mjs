// The 2,000-line Python file whose re-audit the audit page's budget is set
// for (16 ms a keystroke): a capped loop whose body assigns 1,995 values
// before it checks whether it is done. The browser test types into it; the
// re-audit benchmark (`end2end/bench/reaudit.mjs`) feeds it to the page's
// engine module in node.
export function reauditSource() {
  const body = Array.from({ length: 1995 }, (_, i) => `        value_${i} = compute(state, ${i})`).join("\n");
  return `def run(agent, max_turns=50):\n    for turn in range(max_turns):\n        state = agent.step()\n${body}\n        if state.done:\n            break\n`;
}
