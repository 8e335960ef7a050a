import { hasToolCall, stepCountIs, streamText } from "ai";

const controller = new AbortController();
process.on("SIGTERM", () => controller.abort());

export function research(topic: string) {
  return streamText({
    model,
    tools: { search, finalAnswer },
    stopWhen: [stepCountIs(20), hasToolCall("finalAnswer")],
    abortSignal: controller.signal,
    prompt: `Research ${topic}`,
  });
}
