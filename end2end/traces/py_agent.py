"""An agent run traced with OpenTelemetry's GenAI conventions, exported by
the official Python SDK and OTLP/HTTP exporter (protobuf) to Fixed Point.

Reads a plan from standard input:
  {"url": BASE, "token": T, "agent": NAME, "conversation": ID or null,
   "service": NAME, "gzip": true, "batch": 3,
   "rounds": [{"tool": "search", "arguments": {...}, "input_tokens": 120,
               "output_tokens": 30, "legacy": false, "error": null,
               "finding": null}],
   "extra_span": true}
Each round is a chat span followed by an execute_tool span (when "tool" is
set), inside one invoke_agent span. "legacy" writes the older attribute
names (gen_ai.system, gen_ai.usage.prompt_tokens and completion_tokens).
"extra_span" adds a child span that is no GenAI span. Prints one JSON line.
"""

import json
import sys

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode


def main() -> None:
    plan = json.load(sys.stdin)
    exporter = OTLPSpanExporter(
        endpoint=plan["url"] + "/v1/traces",
        headers={"authorization": "Bearer " + plan["token"]},
        compression=Compression.Gzip if plan.get("gzip") else Compression.NoCompression,
        timeout=10,
    )
    provider = TracerProvider(resource=Resource.create({"service.name": plan.get("service", "py-agent")}))
    # Small batches, so one run travels in several exports.
    provider.add_span_processor(
        BatchSpanProcessor(exporter, max_export_batch_size=plan.get("batch", 512), schedule_delay_millis=50)
    )
    tracer = provider.get_tracer("fixedpoint.tests.py_agent")
    agent_attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": plan["agent"]}
    if plan.get("conversation"):
        agent_attributes["gen_ai.conversation.id"] = plan["conversation"]
    with tracer.start_as_current_span("invoke_agent " + plan["agent"], attributes=agent_attributes):
        for step in plan["rounds"]:
            if step.get("legacy"):
                chat_attributes = {
                    "gen_ai.system": "openai",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.prompt_tokens": step.get("input_tokens", 0),
                    "gen_ai.usage.completion_tokens": step.get("output_tokens", 0),
                }
            else:
                chat_attributes = {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": step.get("input_tokens", 0),
                    "gen_ai.usage.output_tokens": step.get("output_tokens", 0),
                }
            with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT, attributes=chat_attributes):
                pass
            if step.get("tool"):
                tool_attributes = {"gen_ai.tool.name": step["tool"]}
                if not step.get("legacy"):
                    tool_attributes["gen_ai.operation.name"] = "execute_tool"
                if step.get("arguments") is not None:
                    tool_attributes["gen_ai.tool.call.arguments"] = json.dumps(step["arguments"], sort_keys=True)
                with tracer.start_as_current_span("execute_tool " + step["tool"], attributes=tool_attributes) as tool:
                    if step.get("finding"):
                        tool.add_event("fixedpoint.finding", step["finding"])
                    if step.get("error"):
                        tool.set_attribute("error.type", "ToolError")
                        tool.set_status(Status(StatusCode.ERROR, step["error"]))
                    if plan.get("extra_span"):
                        with tracer.start_as_current_span("GET /search", kind=SpanKind.CLIENT):
                            pass
    flushed = provider.force_flush(timeout_millis=10_000)
    provider.shutdown()
    print(json.dumps({"flushed": flushed}))


if __name__ == "__main__":
    main()
