import { generateText, stepCountIs, tool } from "ai";
import { openai } from "@ai-sdk/openai";

export async function answer(question: string): Promise<string> {
  const { text } = await generateText({
    model: openai("gpt-4o"),
    tools: { weather: tool({ description: "weather", inputSchema, execute: getWeather }) },
    stopWhen: stepCountIs(5),
    maxOutputTokens: 800,
    prompt: question,
  });
  return text;
}
