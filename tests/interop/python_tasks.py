#!/usr/bin/env python3
"""InterLock's held calls as MCP Tasks through the Python SDK's tasks client (PyPI `mcp` 1.30.0,
the last line that has one: MCP 2025-11-25 experimental tasks, `ClientSession.experimental`).

A write queued with `call_tool_as_task` on one gateway is followed on another gateway of the
same control database: `working` there, approved by an approver through `/admin`, `poll_task`
until `completed`, `get_task_result` returns the executed result; a rejection ends it `failed`
with the refusal as its result; `cancel_task` withdraws it; `list_tasks` lists them.

Usage: python_tasks.py --endpoint URL --other URL --key AGENT_KEY --approver-key KEY
Prints one JSON summary line; exits 1 when a check fails, 2 on a usage or connection error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import warnings
from contextlib import AsyncExitStack
from typing import Any

try:
    import httpx
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import McpError
    from mcp.types import CallToolResult
    import mcp
except ImportError as exc:  # pragma: no cover - environment problem
    print(json.dumps({"client": "python-mcp-tasks", "ok": False, "error": f"cannot import mcp: {exc}"}))
    sys.exit(2)

# mcp 1.28+ marks the experimental tasks client deprecated (removed in 2.0): expected here.
warnings.simplefilter("ignore", DeprecationWarning)

checks: list[dict[str, Any]] = []


def check(name: str, ok: bool, detail: Any = None) -> None:
    entry: dict[str, Any] = {"name": name, "ok": bool(ok)}
    if not ok:
        entry["detail"] = str(detail)[:600]
    checks.append(entry)


def write(order: int) -> dict[str, Any]:
    return {"source_id": "shop", "sql": f"UPDATE public.orders SET status = 'held' WHERE id = {order}"}


async def session(stack: AsyncExitStack, endpoint: str, key: str) -> ClientSession:
    http = await stack.enter_async_context(httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60))
    read, write_stream, _ = await stack.enter_async_context(streamable_http_client(endpoint, http_client=http))
    s = await stack.enter_async_context(ClientSession(read, write_stream))
    await s.initialize()
    return s


async def decide(args: argparse.Namespace, task_id: str, verb: str, reason: str) -> None:
    base = args.endpoint.removesuffix("/mcp")
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {args.approver_key}"}) as http:
        res = await http.post(f"{base}/admin/approvals/{task_id}/{verb}", json={"reason": reason})
        res.raise_for_status()


async def until_ended(s: ClientSession, task_id: str) -> Any:
    last = None
    async for status in s.experimental.poll_task(task_id):
        last = status
    return last


async def run(args: argparse.Namespace) -> None:
    async with AsyncExitStack() as stack:
        a = await session(stack, args.endpoint, args.key)
        b = await session(stack, args.other, args.key)

        created = await a.experimental.call_tool_as_task("interlock_query", write(51), ttl=60000)
        task_id = created.task.taskId
        check("a held write becomes a working task", created.task.status == "working", created)
        seen = await b.experimental.get_task(task_id)
        check(
            "the other gateway sees it working, told not to retry",
            seen.status == "working" and "do not retry" in (seen.statusMessage or ""),
            seen,
        )
        await decide(args, task_id, "approve", "interop: fine")
        ended = await until_ended(b, task_id)
        check("poll_task ends completed", ended is not None and ended.status == "completed", ended)
        result = await b.experimental.get_task_result(task_id, CallToolResult)
        effect = json.loads(result.content[0].text) if result.content else {}
        check(
            "get_task_result returns the executed write",
            result.isError is False and effect.get("status") == "executed" and effect.get("rows_affected") == 1,
            result,
        )

        created = await b.experimental.call_tool_as_task("interlock_query", write(52), ttl=60000)
        rejected = created.task.taskId
        await decide(args, rejected, "reject", "interop: not today")
        ended = await until_ended(a, rejected)
        check("a rejected task is failed", ended is not None and ended.status == "failed", ended)
        refusal = await a.experimental.get_task_result(rejected, CallToolResult)
        code = (refusal.structuredContent or {}).get("code")
        check("its result is the refusal", refusal.isError is True and code == "approval_rejected", refusal)

        created = await a.experimental.call_tool_as_task("interlock_query", write(53), ttl=60000)
        cancelled = await b.experimental.cancel_task(created.task.taskId)
        check("cancel_task withdraws it", cancelled.status == "cancelled", cancelled)
        try:
            await b.experimental.cancel_task(created.task.taskId)
            check("a second cancel is refused", False, "it was accepted")
        except McpError as e:
            check("a second cancel is refused", e.error.code == -32602, e.error)

        listed = [t.taskId for t in (await a.experimental.list_tasks()).tasks]
        ours = [created.task.taskId, rejected, task_id]
        check("list_tasks lists them newest first", [t for t in listed if t in ours] == ours, listed)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint", required=True)
    p.add_argument("--other", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--approver-key", required=True)
    args = p.parse_args()
    version = getattr(mcp, "__version__", None)
    try:
        from importlib.metadata import version as dist_version

        version = dist_version("mcp")
    except Exception:  # pragma: no cover
        pass
    try:
        asyncio.run(run(args))
    except Exception as exc:  # noqa: BLE001 - reported as a failed run
        print(json.dumps({"client": "python-mcp-tasks", "sdk": version, "ok": False, "error": repr(exc), "checks": checks}))
        sys.exit(2)
    ok = all(c["ok"] for c in checks)
    print(json.dumps({"client": "python-mcp-tasks", "sdk": version, "ok": ok, "checks": checks}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
