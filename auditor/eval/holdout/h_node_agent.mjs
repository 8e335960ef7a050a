import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic();
const MAX_STEPS = 30;

export async function loop(messages) {
  let steps = 0;
  for (;;) {
    const res = await client.messages.create({ model: "claude-sonnet-4-5", max_tokens: 2048, messages, tools });
    steps += 1;
    if (res.stop_reason !== "tool_use") return res;
    if (steps >= MAX_STEPS) throw new Error("too many steps");
    messages.push({ role: "assistant", content: res.content });
    messages.push({ role: "user", content: await runTools(res.content) });
  }
}
