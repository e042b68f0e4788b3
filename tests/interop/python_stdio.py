#!/usr/bin/env python3
"""The official Python MCP SDK (PyPI `mcp` 2.3.0) driving `interlock stdio` as a subprocess.

  python_stdio.py --interlock BIN --config FILE --key KEY [--mode auto|legacy]

The SDK launches `BIN --config FILE stdio` with INTERLOCK_API_KEY in its environment, lists
the tools, queries the demo data and checks a refused query. Prints one JSON summary line;
exits 1 when a check fails, 2 when the server cannot be started.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters


async def run(args: argparse.Namespace) -> dict:
    checks: list[dict] = []

    def check(name: str, ok: bool, detail=None) -> None:
        entry = {"name": name, "ok": bool(ok)}
        if detail is not None:
            entry["detail"] = detail
        checks.append(entry)

    server = StdioServerParameters(
        command=args.interlock,
        args=["--config", args.config, "stdio"],
        env={"INTERLOCK_API_KEY": args.key},
    )
    async with Client(server, mode=args.mode, read_timeout_seconds=60) as client:
        tools = await client.list_tools()
        names = {t.name for t in tools.tools}
        check("lists tools", {"interlock_query", "interlock_list_sources"} <= names, sorted(names))
        res = await client.call_tool(
            "interlock_query",
            {"source_id": "shop", "sql": "SELECT id, name FROM public.customers WHERE id = 1"},
        )
        rows = json.loads(res.content[0].text) if res.content and not res.is_error else None
        check("queries the demo data", bool(rows) and rows[0].get("id") == 1, rows)
        try:
            refused = await client.call_tool(
                "interlock_query", {"source_id": "shop", "sql": "SELECT amount_cents FROM hr.salaries"}
            )
            check("refuses hr.salaries", refused.is_error is True, refused.structured_content)
        except Exception as exc:  # the modern dialect refuses with a JSON-RPC error
            check("refuses hr.salaries", "hr.salaries" in str(exc) or "403" in str(exc), str(exc))
    return {"client": f"python-mcp-stdio-{args.mode}", "ok": all(c["ok"] for c in checks), "checks": checks}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--interlock", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--mode", choices=["auto", "legacy"], default="auto")
    args = p.parse_args()
    try:
        summary = asyncio.run(run(args))
    except Exception as exc:
        print(json.dumps({"client": "python-mcp-stdio", "ok": False, "error": repr(exc)}), flush=True)
        return 2
    print(json.dumps(summary), flush=True)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
