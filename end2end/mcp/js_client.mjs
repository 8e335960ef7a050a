// An MCP client session driven by the server's integration tests, on the
// official TypeScript SDK (@modelcontextprotocol/sdk, pinned at a release
// that speaks protocol revision 2025-06-18, as many deployed clients do).
//
// Reads the same plan as py_client.py on stdin and prints the same shape.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const plan = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const headers = plan.token ? { Authorization: `Bearer ${plan.token}` } : {};
const transport = new StreamableHTTPClientTransport(new URL(plan.url), { requestInit: { headers } });
const client = new Client({ name: "fixedpoint-tests", version: "1.0.0" });
const out = {};
try {
  await client.connect(transport);
  out.protocol_version = transport.protocolVersion ?? null;
  const listed = await client.listTools();
  out.tools = listed.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: tool.inputSchema,
    output_schema: tool.outputSchema ?? null,
  }));
  out.calls = [];
  for (const call of plan.calls ?? []) {
    const result = await client.callTool({ name: call.tool, arguments: call.arguments ?? {} });
    out.calls.push({
      tool: call.tool,
      is_error: Boolean(result.isError),
      structured: result.structuredContent ?? null,
      text: result.content.filter((block) => block.type === "text").map((block) => block.text).join("\n"),
    });
  }
} catch (error) {
  out.connect_error = `${error.name}: ${error.message}`;
  out.status = error.code ?? null;
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
