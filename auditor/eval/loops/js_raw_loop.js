import OpenAI from "openai";

const openai = new OpenAI({ timeout: 20_000 });
const MAX_MS = 10 * 60 * 1000;

export async function run(messages, tools) {
  const start = Date.now();
  while (true) {
    /* older draft: if (steps > maxSteps) break; */
    const res = await openai.chat.completions.create({ model: "gpt-4o", messages, tools, max_tokens: 1000 });
    const msg = res.choices[0].message;
    messages.push(msg);
    if (!msg.tool_calls?.length) break;
    if (Date.now() - start > MAX_MS) break;
    for (const call of msg.tool_calls) {
      messages.push({ role: "tool", tool_call_id: call.id, content: await execute(call) });
    }
  }
  return messages;
}
