"""An MCP client session driven by the server's integration tests, on the
official Python SDK (the `mcp` package from PyPI).

Reads a plan as JSON on stdin:
  {"url": ..., "token": ..., "mode": "legacy" | "auto", "calls": [{"tool": ..., "arguments": {...}}]}
and prints one JSON object: the negotiated protocol version, the tools as
listed (name, description, input and output schemas), and each call's
result (isError, structuredContent, the text). A session that cannot be
opened prints {"connect_error": ..., "code": the JSON-RPC error code}.
"""

import asyncio
import json
import sys

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client


def leaf(error: BaseException) -> BaseException:
    """The first exception inside a group of them (anyio wraps the SDK's)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


async def run(plan: dict) -> dict:
    headers = {"Authorization": f"Bearer {plan['token']}"} if plan.get("token") else {}
    out: dict = {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0))
    try:
        transport = streamable_http_client(plan["url"], http_client=http, terminate_on_close=False)
        async with Client(transport, mode=plan.get("mode", "legacy"), raise_exceptions=True, cache=None) as client:
            out["protocol_version"] = client.protocol_version
            listed = await client.list_tools()
            out["tools"] = [
                {
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": tool.input_schema,
                    "output_schema": tool.output_schema,
                }
                for tool in listed.tools
            ]
            out["calls"] = []
            for call in plan.get("calls", []):
                result = await client.call_tool(call["tool"], call.get("arguments", {}))
                text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
                out["calls"].append(
                    {
                        "tool": call["tool"],
                        "is_error": bool(result.is_error),
                        "structured": result.structured_content,
                        "text": text,
                    }
                )
    except BaseException as error:  # noqa: BLE001 - the test reads what went wrong
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        inner = leaf(error)
        out["connect_error"] = f"{type(inner).__name__}: {inner}"
        # An MCPError carries the JSON-RPC error the server answered with.
        out["code"] = getattr(getattr(inner, "error", None), "code", None)
    finally:
        await http.aclose()
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run(json.load(sys.stdin)))))
