// An agent run traced with OpenTelemetry's GenAI conventions, exported by
// the official JavaScript SDK and OTLP/HTTP exporter
// (@opentelemetry/exporter-trace-otlp-http, which sends OTLP/JSON) to Fixed
// Point. Reads the same plan as py_agent.py from standard input (agent,
// conversation, service, rounds of {tool, arguments, input_tokens,
// output_tokens, error, finding}); prints one JSON line.

import { ROOT_CONTEXT, SpanStatusCode, trace } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const plan = JSON.parse(input);

const exporter = new OTLPTraceExporter({
  url: `${plan.url}/v1/traces`,
  headers: { authorization: `Bearer ${plan.token}` },
});
const provider = new TracerProvider({
  resource: resourceFromAttributes({ "service.name": plan.service ?? "js-agent" }),
  spanProcessors: [new BatchSpanProcessor({ exporter, maxExportBatchSize: plan.batch ?? 512, scheduledDelayMillis: 50 })],
});
const tracer = provider.getTracer("fixedpoint.tests.js_agent");

const agentAttributes = { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": plan.agent };
if (plan.conversation) agentAttributes["gen_ai.conversation.id"] = plan.conversation;
// The SDK's clock reads milliseconds; calls of a real agent take longer than
// that, so each span here is given 20 ms of its own.
let now = Date.now();
const tick = () => (now += 20);
const agent = tracer.startSpan(`invoke_agent ${plan.agent}`, { attributes: agentAttributes, startTime: now }, ROOT_CONTEXT);
const inAgent = trace.setSpan(ROOT_CONTEXT, agent);
for (const step of plan.rounds) {
  const chat = tracer.startSpan("chat gpt-4o", {
    attributes: {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "openai",
      "gen_ai.request.model": "gpt-4o",
      "gen_ai.usage.input_tokens": step.input_tokens ?? 0,
      "gen_ai.usage.output_tokens": step.output_tokens ?? 0,
    },
    startTime: tick(),
  }, inAgent);
  chat.end(tick());
  if (step.tool) {
    const attributes = { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": step.tool };
    if (step.arguments !== undefined) attributes["gen_ai.tool.call.arguments"] = JSON.stringify(step.arguments);
    const tool = tracer.startSpan(`execute_tool ${step.tool}`, { attributes, startTime: tick() }, inAgent);
    if (step.finding) tool.addEvent("fixedpoint.finding", step.finding);
    if (step.error) {
      tool.setAttribute("error.type", "ToolError");
      tool.setStatus({ code: SpanStatusCode.ERROR, message: step.error });
    }
    tool.end(tick());
  }
}
agent.end(tick());
await provider.forceFlush();
await provider.shutdown();
console.log(JSON.stringify({ flushed: true }));
