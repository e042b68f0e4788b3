#!/usr/bin/env python3
"""Raw-HTTP checks of the wire rules in shared/design/MCP-WIRE.md and docs/errors-v1.md.

The SDK clients only exercise the paths they use; this script sends the edge cases byte for byte
(bad headers, wrong mirrors, removed methods, batches, Origin/Host, notifications, ...) and checks
status, JSON-RPC code, error.data and headers. Uses httpx2 from the interop venv (installed with
mcp 2.3.0). Prints one JSON summary line (every check with the request it sent and what came back
when it failed); exits 1 when a check fails.

Usage: wire_checks.py --endpoint http://127.0.0.1:8080/mcp --key <agent key> [--verbose]
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from typing import Any, Callable
from urllib.parse import urlsplit

import httpx2

MODERN = "2026-07-28"
ALL_VERSIONS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
ACCEPT = "application/json, text/event-stream"
CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"
VER_KEY = "io.modelcontextprotocol/protocolVersion"
INFO_KEY = "io.modelcontextprotocol/serverInfo"
READ_ARGS = {"source_id": "shop", "sql": "SELECT id, name FROM public.customers WHERE id = 1"}


def modern_meta(**extra: Any) -> dict[str, Any]:
    return {VER_KEY: MODERN, CAPS_KEY: {}, **extra}


class Reply:
    def __init__(self, resp: httpx2.Response) -> None:
        self.status = resp.status_code
        self.headers = {k.lower(): v for k, v in resp.headers.items()}
        self.ctype = self.headers.get("content-type", "")
        self.raw = resp.text
        self.body: Any = None
        self.events: list[Any] = []
        if "text/event-stream" in self.ctype:
            for line in self.raw.splitlines():
                if line.startswith("data:"):
                    try:
                        self.events.append(json.loads(line[5:].strip()))
                    except ValueError:
                        self.events.append(line)
            responses = [e for e in self.events if isinstance(e, dict) and ("result" in e or "error" in e)]
            self.body = responses[-1] if responses else None
        elif self.raw:
            try:
                self.body = json.loads(self.raw)
            except ValueError:
                self.body = None

    @property
    def error(self) -> dict[str, Any]:
        return (self.body or {}).get("error") or {} if isinstance(self.body, dict) else {}

    @property
    def result(self) -> dict[str, Any]:
        return (self.body or {}).get("result") or {} if isinstance(self.body, dict) else {}

    def brief(self) -> dict[str, Any]:
        keep = {k: v for k, v in self.headers.items() if k not in ("date", "x-request-id", "content-length")}
        return {"status": self.status, "headers": keep, "body": self.raw[:1500]}


class Wire:
    def __init__(self, endpoint: str, key: str, verbose: bool) -> None:
        self.endpoint = endpoint
        self.key = key
        self.verbose = verbose
        self.http = httpx2.Client(timeout=30.0)
        self.results: list[dict[str, Any]] = []
        parts = urlsplit(endpoint)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.netloc = parts.netloc

    def send(self, body: Any, headers: dict[str, str] | None = None, *, method: str = "POST",
             auth: bool = True, raw: bytes | None = None, header_list: list[tuple[str, str]] | None = None
             ) -> tuple[dict[str, Any], Reply]:
        h: dict[str, str] = {"Content-Type": "application/json", "Accept": ACCEPT}
        if auth:
            h["Authorization"] = f"Bearer {self.key}"
        h.update(headers or {})
        h = {k: v for k, v in h.items() if v is not None}
        content = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        all_headers = list(h.items()) + list(header_list or [])
        req = {"method": method, "headers": {k: ("Bearer <agent key>" if k == "Authorization" else v)
                                               for k, v in all_headers},
               "body": content.decode("utf-8", "replace") if content else None}
        resp = self.http.request(method, self.endpoint, headers=all_headers, content=content)
        return req, Reply(resp)

    def send_stdlib(self, body: Any, headers: dict[str, str]) -> tuple[dict[str, Any], Reply]:
        """POST through http.client, which (unlike h11) lets header values keep surrounding whitespace."""
        import http.client

        parts = urlsplit(self.endpoint)
        h = {"Content-Type": "application/json", "Accept": ACCEPT, "Authorization": f"Bearer {self.key}", **headers}
        content = json.dumps(body).encode()
        conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=30)
        try:
            conn.request("POST", parts.path or "/", body=content, headers=h)
            resp = conn.getresponse()
            fake = httpx2.Response(resp.status, headers=resp.getheaders(), content=resp.read())
        finally:
            conn.close()
        req = {"method": "POST", "headers": {k: ("Bearer <agent key>" if k == "Authorization" else v)
                                              for k, v in h.items()}, "body": content.decode()}
        return req, Reply(fake)

    def check(self, name: str, rule: str, req: dict[str, Any], reply: Reply, expect: str,
              ok: bool | Callable[[], bool]) -> None:
        try:
            passed = bool(ok() if callable(ok) else ok)
        except Exception as exc:  # noqa: BLE001 - a malformed reply is a failure, with its cause
            passed = False
            expect = f"{expect} (checker raised {type(exc).__name__}: {exc})"
        entry: dict[str, Any] = {"name": name, "ok": passed, "rule": rule}
        if not passed or self.verbose:
            entry.update(request=req, reply=reply.brief(), expected=expect)
        self.results.append(entry)


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    h = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        h["Mcp-Name"] = name
    return h


def run(w: Wire) -> None:
    # ---- §1 choosing the dialect ---------------------------------------------------------------
    req, r = w.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"MCP-Protocol-Version": "2099-01-01"})
    w.check("unsupported-version-header", "WIRE 1.3", req, r,
            "400, -32022, data {supported: all four versions, requested: '2099-01-01'}",
            lambda: r.status == 400 and r.error.get("code") == -32022
            and r.error.get("data", {}).get("supported") == ALL_VERSIONS
            and r.error.get("data", {}).get("requested") == "2099-01-01" and r.body.get("id") == 1)

    req, r = w.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": modern_meta()}},
                    {"Mcp-Method": "tools/list"})
    w.check("meta-version-without-header-is-modern", "WIRE 1.4 + 2 rung 2", req, r,
            "400, -32020 (modern selected by _meta, header rung fails)",
            lambda: r.status == 400 and r.error.get("code") == -32020 and r.body.get("id") == 2)

    req, r = w.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    w.check("no-header-is-handshake", "WIRE 1.5", req, r,
            "200, tools/list result (served as 2025-03-26)",
            lambda: r.status == 200 and isinstance(r.result.get("tools"), list))

    req, r = w.send({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": {"progressToken": 7}}},
                    {"MCP-Protocol-Version": "2025-11-25"})
    w.check("progress-token-meta-is-not-modern", "WIRE 1 (rmcp _meta.progressToken)", req, r,
            "200, tools/list result", lambda: r.status == 200 and isinstance(r.result.get("tools"), list))

    # ---- §2 modern ladder ----------------------------------------------------------------------
    req, r = w.send({"jsonrpc": "2.0", "id": 10, "method": "tools/list"}, modern_headers("tools/list"))
    w.check("modern-missing-meta", "WIRE 2 rung 1", req, r, "400, -32602, id 10",
            lambda: r.status == 400 and r.error.get("code") == -32602 and r.body.get("id") == 10)

    req, r = w.send({"jsonrpc": "2.0", "id": 11, "method": "tools/list",
                     "params": {"_meta": {VER_KEY: MODERN}}}, modern_headers("tools/list"))
    w.check("modern-missing-client-capabilities", "WIRE 2 rung 1", req, r,
            "400, -32602, data.missing names clientCapabilities",
            lambda: r.status == 400 and r.error.get("code") == -32602
            and CAPS_KEY in json.dumps(r.error.get("data", {})))

    req, r = w.send({"jsonrpc": "2.0", "id": 12, "method": "tools/list", "params": {"_meta": modern_meta()}},
                    modern_headers("TOOLS/LIST"))
    w.check("modern-method-header-case-sensitive", "WIRE 2 rung 2", req, r, "400, -32020",
            lambda: r.status == 400 and r.error.get("code") == -32020)

    req, r = w.send({"jsonrpc": "2.0", "id": 13, "method": "tools/call",
                     "params": {"name": "interlock_list_sources", "arguments": {}, "_meta": modern_meta()}},
                    modern_headers("tools/call"))
    w.check("modern-missing-mcp-name", "WIRE 2 rung 2", req, r, "400, -32020",
            lambda: r.status == 400 and r.error.get("code") == -32020)

    b64 = base64.b64encode(b"interlock_list_sources").decode()
    req, r = w.send({"jsonrpc": "2.0", "id": 14, "method": "tools/call",
                     "params": {"name": "interlock_list_sources", "arguments": {}, "_meta": modern_meta()}},
                    modern_headers("tools/call", f"=?base64?{b64}?="))
    w.check("modern-base64-mcp-name", "WIRE 2 (=?base64?...?=)", req, r, "200 result (decoded name matches)",
            lambda: r.status == 200 and r.result.get("isError") is False)

    req, r = w.send_stdlib({"jsonrpc": "2.0", "id": 15, "method": "tools/call",
                            "params": {"name": "interlock_list_sources", "arguments": {}, "_meta": modern_meta()}},
                           modern_headers("  tools/call ", "  interlock_list_sources  "))
    w.check("modern-header-whitespace-trimmed", "WIRE 2 (trim)", req, r, "200 result",
            lambda: r.status == 200 and r.result.get("isError") is False)

    req, r = w.send({"jsonrpc": "2.0", "id": 16, "method": "tools/list",
                     "params": {"_meta": {VER_KEY: "2025-11-25", CAPS_KEY: {}}}},
                    {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
    w.check("modern-header-meta-version-mismatch", "WIRE 2 rung 2", req, r, "400, -32020",
            lambda: r.status == 400 and r.error.get("code") == -32020)

    for i, method in enumerate(["initialize", "ping", "logging/setLevel", "resources/list", "prompts/list",
                                "completion/complete"]):
        params: dict[str, Any] = {"_meta": modern_meta()}
        req, r = w.send({"jsonrpc": "2.0", "id": f"m{i}", "method": method, "params": params},
                        modern_headers(method))
        w.check(f"modern-removed-{method}", "WIRE 2 rung 4", req, r, "404, -32601, id echoed",
                lambda r=r, i=i: r.status == 404 and r.error.get("code") == -32601 and r.body.get("id") == f"m{i}")

    req, r = w.send({"jsonrpc": "2.0", "id": 20, "method": "server/discover", "params": {"_meta": modern_meta()}},
                    modern_headers("server/discover"), auth=False)
    w.check("modern-discover-shape", "WIRE 2 (discover)", req, r,
            "200; supportedVersions = all four, 2026-07-28 first; capabilities exactly {tools:{}}; ttlMs int >= 0;"
            " cacheScope public; resultType complete; _meta serverInfo name interlock",
            lambda: r.status == 200 and r.result.get("supportedVersions") == ALL_VERSIONS
            and r.result.get("capabilities") == {"tools": {}}
            and isinstance(r.result.get("ttlMs"), int) and r.result["ttlMs"] >= 0
            and r.result.get("cacheScope") == "public" and r.result.get("resultType") == "complete"
            and r.result.get("_meta", {}).get(INFO_KEY, {}).get("name") == "interlock")

    req, r = w.send({"jsonrpc": "2.0", "id": 21, "method": "tools/list", "params": {"_meta": modern_meta()}},
                    modern_headers("tools/list"), auth=False)
    w.check("modern-tools-list-shape", "WIRE 2 (tools/list)", req, r,
            "200 JSON; ttlMs, cacheScope public, resultType complete, serverInfo _meta",
            lambda: r.status == 200 and "application/json" in r.ctype and isinstance(r.result.get("ttlMs"), int)
            and r.result.get("cacheScope") == "public" and r.result.get("resultType") == "complete"
            and r.result.get("_meta", {}).get(INFO_KEY, {}).get("name") == "interlock")

    req, r = w.send({"jsonrpc": "2.0", "id": 22, "method": "tools/call",
                     "params": {"name": "no_such_tool", "arguments": {}, "_meta": modern_meta()}},
                    modern_headers("tools/call", "no_such_tool"))
    w.check("modern-unknown-tool", "errors-v1 4", req, r, "400, -32602, data.code unknown_tool",
            lambda: r.status == 400 and r.error.get("code") == -32602
            and r.error.get("data", {}).get("code") == "unknown_tool")

    req, r = w.send({"jsonrpc": "2.0", "id": 23, "method": "tools/call",
                     "params": {"name": "interlock_query", "arguments": {"source_id": "shop"},
                                "_meta": modern_meta()}},
                    modern_headers("tools/call", "interlock_query"))
    w.check("modern-invalid-arguments", "errors-v1 5", req, r,
            "400, -32602, data {status 400, code invalid_arguments, errors[{path, message}]}",
            lambda: r.status == 400 and r.error.get("code") == -32602
            and r.error.get("data", {}).get("status") == 400
            and r.error.get("data", {}).get("code") == "invalid_arguments"
            and isinstance(r.error.get("data", {}).get("errors"), list))

    req, r = w.send({"jsonrpc": "2.0", "id": 24, "method": "tools/call",
                     "params": {"name": "interlock_query", "arguments": {"source_id": "nope", "sql": "SELECT 1"},
                                "_meta": modern_meta()}},
                    modern_headers("tools/call", "interlock_query"))
    w.check("modern-unknown-source-404", "WIRE 2 / errors-v1 6", req, r,
            "404, -32602, data {status 404, code not_found, reason}",
            lambda: r.status == 404 and r.error.get("code") == -32602
            and r.error.get("data", {}).get("status") == 404 and r.error.get("data", {}).get("code") == "not_found"
            and bool(r.error.get("data", {}).get("reason")) and "application/json" in r.ctype)

    req, r = w.send({"jsonrpc": "2.0", "id": 25, "method": "tools/call",
                     "params": {"name": "interlock_query", "arguments": READ_ARGS, "_meta": modern_meta()}},
                    modern_headers("tools/call", "interlock_query"), auth=False)
    w.check("modern-missing-key-401", "WIRE 2 / errors-v1 6", req, r,
            "401, WWW-Authenticate: Bearer, -32602, data {status 401, code, reason}",
            lambda: r.status == 401 and r.headers.get("www-authenticate", "").startswith("Bearer")
            and r.error.get("code") == -32602 and r.error.get("data", {}).get("status") == 401)

    req, r = w.send({"jsonrpc": "2.0", "id": 26, "method": "tools/call",
                     "params": {"name": "interlock_query", "arguments": READ_ARGS,
                                "_meta": modern_meta(progressToken="p-26")}},
                    modern_headers("tools/call", "interlock_query"))
    w.check("modern-call-sse", "WIRE 4 (response form)", req, r,
            "200 text/event-stream, X-Accel-Buffering: no, one JSON-RPC response with resultType complete",
            lambda: r.status == 200 and "text/event-stream" in r.ctype
            and r.headers.get("x-accel-buffering") == "no" and r.result.get("resultType") == "complete"
            and r.body.get("id") == 26)
    w.results[-1]["observed_events"] = [e.get("method", "response") if isinstance(e, dict) else "?" for e in r.events]

    # ---- §3 handshake --------------------------------------------------------------------------
    for i, (offered, answered) in enumerate([("2025-03-26", "2025-03-26"), ("2025-06-18", "2025-06-18"),
                                             ("2025-11-25", "2025-11-25"), ("2026-07-28", "2025-11-25"),
                                             ("2024-11-05", "2025-11-25")]):
        req, r = w.send({"jsonrpc": "2.0", "id": 30 + i, "method": "initialize",
                         "params": {"protocolVersion": offered, "capabilities": {},
                                    "clientInfo": {"name": "wire", "version": "0"}}}, auth=False)
        w.check(f"initialize-offers-{offered}", "WIRE 3 (initialize)", req, r,
                f"200, protocolVersion {answered}, capabilities {{tools:{{}}}}, serverInfo, no resultType/_meta",
                lambda r=r, a=answered: r.status == 200 and r.result.get("protocolVersion") == a
                and r.result.get("capabilities") == {"tools": {}} and "serverInfo" in r.result
                and "resultType" not in r.result and "_meta" not in r.result)

    req, r = w.send({"jsonrpc": "2.0", "id": 40, "method": "ping"}, {"MCP-Protocol-Version": "2025-11-25"})
    w.check("handshake-ping-empty", "WIRE 3 (ping)", req, r, "200, result exactly {}",
            lambda: r.status == 200 and r.body.get("result") == {})

    for i, note in enumerate(["notifications/initialized", "notifications/cancelled"]):
        params = {"requestId": 999, "reason": "wire check"} if note.endswith("cancelled") else {}
        req, r = w.send({"jsonrpc": "2.0", "method": note, "params": params}, {"MCP-Protocol-Version": "2025-11-25"})
        w.check(f"handshake-{note.split('/')[1]}-202", "WIRE 3 (notifications)", req, r, "202, empty body",
                lambda r=r: r.status == 202 and r.raw == "")

    req, r = w.send({"jsonrpc": "2.0", "id": 41, "method": "resources/list"}, {"MCP-Protocol-Version": "2025-11-25"})
    w.check("handshake-unknown-method-200", "WIRE 3 / errors-v1 4", req, r, "HTTP 200, -32601",
            lambda: r.status == 200 and r.error.get("code") == -32601 and r.body.get("id") == 41)

    req, r = w.send({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
                     "params": {"name": "no_such_tool", "arguments": {}}}, {"MCP-Protocol-Version": "2025-11-25"})
    w.check("handshake-unknown-tool-200", "errors-v1 4", req, r, "HTTP 200, -32602, data.code unknown_tool",
            lambda: r.status == 200 and r.error.get("code") == -32602
            and r.error.get("data", {}).get("code") == "unknown_tool")

    req, r = w.send({"jsonrpc": "2.0", "id": 43, "method": "tools/call",
                     "params": {"name": "interlock_query", "arguments": {"source_id": "shop"}}},
                    {"MCP-Protocol-Version": "2025-11-25"})
    w.check("handshake-invalid-arguments-tool-result", "errors-v1 5", req, r,
            "200 result isError true, structuredContent {status invalid_arguments, http_status 400, code, message, errors}",
            lambda: r.status == 200 and r.result.get("isError") is True
            and r.result.get("structuredContent", {}).get("status") == "invalid_arguments"
            and r.result.get("structuredContent", {}).get("http_status") == 400
            and isinstance(r.result.get("structuredContent", {}).get("errors"), list))

    req, r = w.send({"jsonrpc": "2.0", "id": 44, "method": "tools/call",
                     "params": {"name": "interlock_query", "arguments": READ_ARGS}},
                    {"MCP-Protocol-Version": "2025-11-25"})
    w.check("handshake-call-sse", "WIRE 4 (response form)", req, r,
            "200 text/event-stream, X-Accel-Buffering: no, result with resultType complete + serverInfo _meta",
            lambda: r.status == 200 and "text/event-stream" in r.ctype
            and r.headers.get("x-accel-buffering") == "no" and r.result.get("resultType") == "complete"
            and r.result.get("_meta", {}).get(INFO_KEY, {}).get("name") == "interlock")

    req, r = w.send({"jsonrpc": "2.0", "id": 45, "method": "tools/call",
                     "params": {"name": "interlock_query", "arguments": READ_ARGS, "_meta": {"progressToken": "p45"}}},
                    {"MCP-Protocol-Version": "2025-11-25"})
    w.check("handshake-call-with-progress-token", "WIRE 4 (progress)", req, r,
            "200 SSE; final response for id 45 (progress notifications optional for a fast query)",
            lambda: r.status == 200 and r.body.get("id") == 45 and r.result.get("isError") is False)
    w.results[-1]["observed_events"] = [e.get("method", "response") if isinstance(e, dict) else "?" for e in r.events]

    req, r = w.send({"jsonrpc": "2.0", "id": 46, "method": "server/discover"}, auth=False)
    w.check("handshake-server-discover", "contract (server/discover: both dialects)", req, r,
            "200, supportedVersions = all four",
            lambda: r.status == 200 and r.result.get("supportedVersions") == ALL_VERSIONS)

    req, r = w.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 998, "reason": "wire check"}}, {"MCP-Protocol-Version": MODERN})
    w.check("modern-notification-202-without-ladder", "errors-v1 3 (notifications skip the ladder)", req, r,
            "202, empty body", lambda: r.status == 202 and r.raw == "")

    # ---- §4 both dialects ----------------------------------------------------------------------
    req, r = w.send({"jsonrpc": "2.0", "id": 50, "method": "tools/list"}, {"Content-Type": "text/plain"})
    w.check("content-type-415", "WIRE 4", req, r, "415, -32600, id null",
            lambda: r.status == 415 and r.error.get("code") == -32600 and r.body.get("id") is None)

    req, r = w.send({"jsonrpc": "2.0", "id": 51, "method": "tools/list"},
                    {"Content-Type": "application/json; charset=utf-8"})
    w.check("content-type-charset-ok", "WIRE 4", req, r, "200", lambda: r.status == 200)

    for i, acc in enumerate(["application/json", "text/event-stream", "*/*"]):
        req, r = w.send({"jsonrpc": "2.0", "id": 52 + i, "method": "tools/list"}, {"Accept": acc})
        w.check(f"accept-406-{acc}", "WIRE 4", req, r, "406, -32600",
                lambda r=r: r.status == 406 and r.error.get("code") == -32600)

    req, r = w.send([{"jsonrpc": "2.0", "id": 55, "method": "tools/list"}])
    w.check("batch-400", "WIRE 4", req, r, "400, -32600", lambda: r.status == 400 and r.error.get("code") == -32600)

    req, r = w.send(None, raw=b'{"jsonrpc": "2.0", "id": 56, "method": ')
    w.check("invalid-json-400", "WIRE 4", req, r, "400, -32700, id null",
            lambda: r.status == 400 and r.error.get("code") == -32700 and r.body.get("id") is None)

    req, r = w.send({"jsonrpc": "2.0", "id": None, "method": "tools/list"})
    w.check("null-id-400", "errors-v1 2", req, r, "400, -32600",
            lambda: r.status == 400 and r.error.get("code") == -32600)

    req, r = w.send({"jsonrpc": "2.0", "id": 57, "method": "tools/list"},
                    header_list=[("MCP-Protocol-Version", "2025-11-25"), ("MCP-Protocol-Version", "2025-11-25")])
    w.check("duplicate-version-header-400", "errors-v1 2", req, r, "400, -32600",
            lambda: r.status == 400 and r.error.get("code") == -32600)

    for m in ("GET", "DELETE"):
        req, r = w.send(None, method=m)
        w.check(f"{m.lower()}-405", "WIRE 4", req, r, "405, Allow: POST",
                lambda r=r: r.status == 405 and r.headers.get("allow") == "POST")

    req, r = w.send({"jsonrpc": "2.0", "id": 58, "method": "tools/list"},
                    {"Mcp-Session-Id": "made-up-session", "Last-Event-ID": "42"})
    w.check("session-id-ignored", "WIRE 4", req, r, "200, no Mcp-Session-Id in the response",
            lambda: r.status == 200 and "mcp-session-id" not in r.headers)

    req, r = w.send({"jsonrpc": "2.0", "id": 59, "method": "initialize",
                     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "wire", "version": "0"}}}, auth=False)
    w.check("initialize-mints-no-session", "WIRE 4", req, r, "200, no Mcp-Session-Id",
            lambda: r.status == 200 and "mcp-session-id" not in r.headers)

    req, r = w.send({"jsonrpc": "2.0", "id": 60, "method": "tools/list"}, {"Origin": "http://evil.example"})
    w.check("foreign-origin-403", "WIRE 4", req, r, "403", lambda: r.status == 403)

    req, r = w.send({"jsonrpc": "2.0", "id": 61, "method": "tools/list"}, {"Origin": w.origin})
    w.check("own-origin-ok", "WIRE 4", req, r, "200", lambda: r.status == 200)

    req, r = w.send({"jsonrpc": "2.0", "id": 62, "method": "tools/list"}, {"Host": "evil.example"})
    w.check("foreign-host-403", "WIRE 4", req, r, "403", lambda: r.status == 403)

    port = w.netloc.rsplit(":", 1)[-1]
    req, r = w.send({"jsonrpc": "2.0", "id": 63, "method": "tools/list"}, {"Host": f"localhost:{port}"})
    w.check("localhost-host-ok", "WIRE 4", req, r, "200", lambda: r.status == 200)

    req, r = w.send({"jsonrpc": "2.0", "id": 64, "method": "tools/list"}, {"MCP-Protocol-Version": "2025-11-25"})
    w.check("non-call-is-json", "WIRE 4 (response form)", req, r, "200 application/json",
            lambda: r.status == 200 and "application/json" in r.ctype)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--verbose", action="store_true", help="include request and reply for passing checks too")
    args = parser.parse_args()
    started = time.monotonic()
    w = Wire(args.endpoint, args.key, args.verbose)
    try:
        run(w)
    except httpx2.HTTPError as exc:
        print(json.dumps({"client": "wire-checks", "ok": False, "error": f"{type(exc).__name__}: {exc}",
                          "checks": w.results}))
        print(f"wire-checks: FAILED: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    failed = [c["name"] for c in w.results if not c["ok"]]
    print(json.dumps({"client": "wire-checks", "endpoint": args.endpoint, "ok": not failed, "failed": failed,
                      "passed": len(w.results) - len(failed), "checks": w.results,
                      "elapsed_s": round(time.monotonic() - started, 2)}))
    for c in w.results:
        if not c["ok"]:
            print(f"wire-checks: {c['name']} ({c['rule']}) FAILED: expected {c['expected']}; got "
                  f"{json.dumps(c['reply'])[:600]}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
