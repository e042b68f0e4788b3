#!/usr/bin/env python3
"""InterLock interoperability check with the official Python MCP SDK (PyPI `mcp` 2.3.0).

Drives a running gateway through `mcp.client.Client` exactly as an application would:

  --mode auto    the SDK default: probes `server/discover` and speaks 2026-07-28 (modern dialect)
  --mode legacy  `Client(mode="legacy")`: forces the `initialize` handshake (handshake dialect)

Steps: connect, list tools, call interlock_list_sources, call interlock_query on demo data, and
call a query the demo agent is refused (hr.salaries), checking that the refusal is rendered the
way the dialect specifies (modern: JSON-RPC error -32602 with data {status: 403, code, reason};
handshake: tool result isError true with structuredContent {status: "forbidden", http_status:
403, code, message}). Prints one JSON summary line on stdout; exits 1 when any check fails
(2 on a usage or connection error). --trace writes every HTTP exchange to stderr (the
Authorization header is redacted).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

try:
    import httpx2
    from mcp.client import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
except ImportError as exc:  # pragma: no cover - environment problem
    print(
        json.dumps({"client": "python-mcp", "ok": False, "error": f"cannot import the mcp SDK: {exc}"}),
        flush=True,
    )
    sys.exit(2)

MODERN = "2026-07-28"
HANDSHAKE = {"2025-03-26", "2025-06-18", "2025-11-25"}
REQUIRED_TOOLS = {"interlock_query", "interlock_list_sources"}
DEMO_SOURCE = "shop"
READ_SQL = "SELECT id, name FROM public.customers WHERE id = 1"
REFUSED_SQL = "SELECT amount_cents FROM hr.salaries"


class Checks:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def record(self, name: str, ok: bool, detail: Any = None) -> bool:
        entry: dict[str, Any] = {"name": name, "ok": bool(ok)}
        if detail is not None:
            entry["detail"] = detail
        self.items.append(entry)
        return ok

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [c for c in self.items if not c["ok"]]


def _trace_hooks(enabled: bool) -> dict[str, list[Any]]:
    if not enabled:
        return {}

    async def on_request(request: httpx2.Request) -> None:
        headers = {k: ("<redacted>" if k.lower() == "authorization" else v) for k, v in request.headers.items()}
        try:
            body = request.content.decode("utf-8", "replace")
        except Exception:  # streaming body
            body = "<stream>"
        print(f">>> {request.method} {request.url}\n>>> headers {json.dumps(headers)}\n>>> body {body}", file=sys.stderr)

    async def on_response(response: httpx2.Response) -> None:
        print(
            f"<<< {response.status_code} {json.dumps(dict(response.headers.items()))}",
            file=sys.stderr,
        )
        ctype = response.headers.get("content-type", "")
        if "text/event-stream" not in ctype:
            await response.aread()
            print(f"<<< body {response.text[:4000]}", file=sys.stderr)

    return {"event_hooks": {"request": [on_request], "response": [on_response]}}


def _text(result: Any) -> str:
    for item in result.content or []:
        if getattr(item, "type", None) == "text":
            return item.text
    return ""


def _modern_refusal_ok(err: MCPError) -> tuple[bool, Any]:
    data = err.data if isinstance(err.data, dict) else {}
    ok = (
        err.code == -32602
        and data.get("status") == 403
        and isinstance(data.get("code"), str)
        and bool(data.get("code"))
        and isinstance(data.get("reason"), str)
        and bool(data.get("reason"))
    )
    return ok, {"code": err.code, "message": err.message, "data": err.data}


def _handshake_refusal_ok(result: Any) -> tuple[bool, Any]:
    sc = result.structured_content if isinstance(result.structured_content, dict) else {}
    ok = (
        result.is_error is True
        and sc.get("status") == "forbidden"
        and sc.get("http_status") == 403
        and isinstance(sc.get("code"), str)
        and bool(sc.get("code"))
        and isinstance(sc.get("message"), str)
        and bool(sc.get("message"))
        and bool(_text(result))
    )
    return ok, {"isError": result.is_error, "structuredContent": result.structured_content, "text": _text(result)[:300]}


async def run(endpoint: str, key: str, mode: str, trace: bool, timeout: float) -> dict[str, Any]:
    checks = Checks()
    summary: dict[str, Any] = {"client": "python-mcp", "sdk": _sdk_version(), "mode": mode, "endpoint": endpoint}
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"},
        timeout=httpx2.Timeout(timeout, read=timeout),
        **_trace_hooks(trace),
    )
    async with http:
        transport = streamable_http_client(endpoint, http_client=http)
        async with Client(transport, mode=mode, read_timeout_seconds=timeout, cache=None) as client:
            version = client.protocol_version
            summary["protocol_version"] = version
            if mode == "auto":
                modern = checks.record(
                    "negotiated-modern",
                    version == MODERN and client.session.discover_result is not None,
                    {"protocol_version": version, "discovered": client.session.discover_result is not None},
                )
            else:
                modern = False
                checks.record(
                    "negotiated-handshake",
                    version in HANDSHAKE and client.session.discover_result is None,
                    {"protocol_version": version},
                )
            info = client.server_info
            checks.record("server-info", info is not None and info.name == "interlock", info and info.model_dump())
            caps = client.server_capabilities
            checks.record("tools-capability", caps.tools is not None, caps.model_dump(exclude_none=True))

            tools = await client.list_tools()
            names = [t.name for t in tools.tools]
            summary["tools"] = names
            checks.record("tools-list", REQUIRED_TOOLS <= set(names), {"missing": sorted(REQUIRED_TOOLS - set(names))})

            res = await client.call_tool("interlock_list_sources", {})
            try:
                sources = json.loads(_text(res))
            except ValueError:
                sources = None
            checks.record(
                "list-sources",
                res.is_error is not True and isinstance(sources, dict) and DEMO_SOURCE in sources,
                {"isError": res.is_error, "text": _text(res)[:300]},
            )

            res = await client.call_tool("interlock_query", {"source_id": DEMO_SOURCE, "sql": READ_SQL})
            try:
                rows = json.loads(_text(res))
            except ValueError:
                rows = None
            checks.record(
                "query-demo-data",
                res.is_error is not True
                and isinstance(rows, list)
                and len(rows) == 1
                and rows[0].get("id") == 1
                and isinstance(rows[0].get("name"), str),
                {"isError": res.is_error, "text": _text(res)[:300]},
            )

            refusal_name = "refusal-modern-jsonrpc-error" if modern else "refusal-handshake-tool-result"
            try:
                res = await client.call_tool("interlock_query", {"source_id": DEMO_SOURCE, "sql": REFUSED_SQL})
            except MCPError as err:
                if modern:
                    ok, detail = _modern_refusal_ok(err)
                else:
                    ok, detail = False, {"unexpected": "JSON-RPC error in the handshake dialect",
                                         "code": err.code, "message": err.message, "data": err.data}
                checks.record(refusal_name, ok, detail)
            else:
                if modern:
                    checks.record(refusal_name, False, {"unexpected": "tool result instead of a JSON-RPC error",
                                                        "isError": res.is_error,
                                                        "structuredContent": res.structured_content})
                else:
                    ok, detail = _handshake_refusal_ok(res)
                    checks.record(refusal_name, ok, detail)

        # The other catalogue tools: record which answer "unavailable" and that the 503 is rendered per dialect.
        await _probe_other_tools(endpoint, key, mode, trace, timeout, names, modern, checks, summary)
        # A wrong key: 401 rendered per dialect.
        await _probe_unauthorized(endpoint, mode, trace, timeout, modern, checks)

    summary["checks"] = checks.items
    summary["failed"] = [c["name"] for c in checks.failed]
    summary["ok"] = not checks.failed
    return summary


# Minimal valid arguments for the catalogue tools other than query/list_sources.
OTHER_TOOL_ARGS: dict[str, dict[str, Any]] = {
    "interlock_describe_access": {},
    "interlock_describe_source": {"source_id": DEMO_SOURCE},
    "interlock_discover": {"source_id": DEMO_SOURCE},
    "interlock_related_documents": {"asset_id": "interop-probe"},
    "interlock_approval_status": {"approval_id": "00000000-0000-0000-0000-000000000000"},
}


def _outcome(res: Any = None, err: MCPError | None = None) -> dict[str, Any]:
    if err is not None:
        data = err.data if isinstance(err.data, dict) else {}
        return {"form": "jsonrpc-error", "code": err.code, "status": data.get("status"), "key": data.get("code")}
    sc = res.structured_content if isinstance(res.structured_content, dict) else {}
    return {"form": "tool-result", "isError": res.is_error, "status": sc.get("status"),
            "http_status": sc.get("http_status"), "key": sc.get("code")}


async def _call(client: Client, name: str, args: dict[str, Any]) -> dict[str, Any]:
    try:
        return _outcome(res=await client.call_tool(name, args))
    except MCPError as err:
        return _outcome(err=err)


def _is_unavailable(o: dict[str, Any], modern: bool) -> bool:
    if modern:
        return o["form"] == "jsonrpc-error" and o["code"] == -32603 and o["status"] == 503 and o["key"] == "unavailable"
    return (o["form"] == "tool-result" and o["isError"] is True and o["status"] == "unavailable"
            and o["http_status"] == 503 and o["key"] == "unavailable")


async def _probe_other_tools(endpoint: str, key: str, mode: str, trace: bool, timeout: float, names: list[str],
                             modern: bool, checks: Checks, summary: dict[str, Any]) -> None:
    outcomes: dict[str, Any] = {}
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(timeout),
                                  **_trace_hooks(trace)) as http:
        async with Client(streamable_http_client(endpoint, http_client=http), mode=mode,
                          read_timeout_seconds=timeout, cache=None) as client:
            await client.list_tools()
            for name, args in OTHER_TOOL_ARGS.items():
                if name in names:
                    outcomes[name] = await _call(client, name, args)
    unavailable = sorted(n for n, o in outcomes.items() if _is_unavailable(o, modern))
    summary["unavailable_tools"] = unavailable
    # An outcome that looks like a 503 but is rendered the wrong way for the dialect is a failure;
    # any other outcome (a real answer, a 404 for the made-up ids) is fine here.
    misrendered = {n: o for n, o in outcomes.items()
                   if n not in unavailable and (o.get("status") in (503, "unavailable") or o.get("http_status") == 503)}
    checks.record("unavailable-rendering", not misrendered, {"unavailable": unavailable, "misrendered": misrendered,
                                                              "outcomes": outcomes})


async def _probe_unauthorized(endpoint: str, mode: str, trace: bool, timeout: float, modern: bool,
                              checks: Checks) -> None:
    name = "unauthorized-modern-jsonrpc-error" if modern else "unauthorized-handshake-tool-result"
    async with httpx2.AsyncClient(headers={"Authorization": "Bearer ilk_not_a_valid_key"},
                                  timeout=httpx2.Timeout(timeout), **_trace_hooks(trace)) as http:
        async with Client(streamable_http_client(endpoint, http_client=http), mode=mode,
                          read_timeout_seconds=timeout, cache=None) as client:
            await client.list_tools()
            o = await _call(client, "interlock_query", {"source_id": DEMO_SOURCE, "sql": READ_SQL})
    if modern:
        ok = o["form"] == "jsonrpc-error" and o["code"] == -32602 and o["status"] == 401 and bool(o["key"])
    else:
        ok = (o["form"] == "tool-result" and o["isError"] is True and o["status"] == "unauthorized"
              and o["http_status"] == 401 and bool(o["key"]))
    checks.record(name, ok, o)


def _sdk_version() -> str:
    try:
        from importlib.metadata import version

        return version("mcp")
    except Exception:
        return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint", required=True, help="MCP endpoint, e.g. http://127.0.0.1:8080/mcp")
    parser.add_argument("--key", required=True, help="agent API key (sent as Authorization: Bearer)")
    parser.add_argument("--mode", choices=["auto", "legacy"], default="auto")
    parser.add_argument("--trace", action="store_true", help="log every HTTP exchange to stderr")
    parser.add_argument("--timeout", type=float, default=30.0, help="per-request timeout in seconds")
    args = parser.parse_args()

    started = time.monotonic()
    try:
        summary = asyncio.run(run(args.endpoint, args.key, args.mode, args.trace, args.timeout))
    except BaseException as exc:  # noqa: BLE001 - report every failure as one JSON line
        if isinstance(exc, KeyboardInterrupt):
            raise
        leaf = exc
        while isinstance(leaf, BaseExceptionGroup) and leaf.exceptions:
            leaf = leaf.exceptions[0]
        detail: dict[str, Any] = {"type": type(leaf).__name__, "message": str(leaf)}
        if isinstance(leaf, MCPError):
            detail.update(code=leaf.code, data=leaf.data)
        summary = {"client": "python-mcp", "sdk": _sdk_version(), "mode": args.mode, "endpoint": args.endpoint,
                   "ok": False, "error": detail}
        summary["elapsed_s"] = round(time.monotonic() - started, 2)
        print(json.dumps(summary), flush=True)
        print(f"python-mcp ({args.mode}): FAILED: {detail['type']}: {detail['message']}", file=sys.stderr)
        return 2
    summary["elapsed_s"] = round(time.monotonic() - started, 2)
    print(json.dumps(summary), flush=True)
    if not summary["ok"]:
        for c in summary["checks"]:
            if not c["ok"]:
                print(f"python-mcp ({args.mode}): check {c['name']} FAILED: {json.dumps(c.get('detail'))}",
                      file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
