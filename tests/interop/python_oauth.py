#!/usr/bin/env python3
"""OAuth discovery of the official Python MCP SDK (PyPI `mcp` 2.3.0) against InterLock.

Connects with no credential through `mcp.client.auth.OAuthClientProvider`, as an application
that signs its users in would, and calls a tool. The gateway answers 401 with `WWW-Authenticate: Bearer
resource_metadata="…"`; the SDK must then read the protected-resource metadata (RFC 9728),
the authorization server's metadata it names (RFC 8414), register (RFC 7591) and send the user
to the authorization endpoint with `resource` = the MCP endpoint (RFC 8707) and the scope the
challenge named. The redirect is captured and the flow stopped there (no person signs in).

Usage: python_oauth.py --endpoint URL --issuer ISSUER_URL --scope SCOPE
Prints one JSON summary line; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken


class Memory(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Redirected(Exception):
    pass


async def run(endpoint: str, issuer: str, scope: str) -> dict[str, Any]:
    requested: list[str] = []
    redirects: list[str] = []

    async def on_request(request: httpx2.Request) -> None:
        requested.append(f"{request.method} {request.url}")

    async def redirect(url: str) -> None:
        redirects.append(url)
        raise Redirected()

    async def callback() -> Any:
        raise Redirected()

    provider = OAuthClientProvider(
        server_url=endpoint,
        client_metadata=OAuthClientMetadata(
            client_name="interlock-interop",
            redirect_uris=["http://127.0.0.1:9/callback"],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=Memory(),
        redirect_handler=redirect,
        callback_handler=callback,
    )
    error = None
    http = httpx2.AsyncClient(auth=provider, timeout=30, event_hooks={"request": [on_request]})
    try:
        async with http:
            async with Client(streamable_http_client(endpoint, http_client=http), mode="legacy") as client:
                # Connecting and listing tools need no credential; calling one does.
                await client.list_tools()
                await client.call_tool("interlock_list_sources", {})
    except BaseException as exc:  # the flow stops at the captured redirect
        error = repr(exc)[:300]

    parsed = urlparse(endpoint)
    prm = f"GET {parsed.scheme}://{parsed.netloc}/.well-known/oauth-protected-resource{parsed.path}"
    asm = f"GET {issuer}/.well-known/oauth-authorization-server"
    checks = []

    def check(name: str, ok: bool, detail: Any = None) -> None:
        checks.append({"name": name, "ok": bool(ok), **({"detail": detail} if detail is not None else {})})

    check("read-protected-resource-metadata", prm in requested, requested)
    check("read-authorization-server-metadata", asm in requested, requested)
    check("registered", f"POST {issuer}/register" in requested, requested)
    query = parse_qs(urlparse(redirects[0]).query) if redirects else {}
    check("redirected-to-issuer", bool(redirects) and redirects[0].startswith(f"{issuer}/authorize"), redirects)
    check("resource-is-the-endpoint", query.get("resource") == [endpoint], query.get("resource"))
    check("scope-from-the-challenge", scope in (query.get("scope") or [""])[0].split(), query.get("scope"))
    failed = [c for c in checks if not c["ok"]]
    return {"client": "python-mcp-oauth", "ok": not failed, "checks": checks, "stopped_by": error}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--endpoint", required=True)
    p.add_argument("--issuer", required=True)
    p.add_argument("--scope", required=True)
    a = p.parse_args()
    summary = asyncio.run(run(a.endpoint, a.issuer.rstrip("/"), a.scope))
    print(json.dumps(summary), flush=True)
    if not summary["ok"]:
        print(json.dumps(summary, indent=2), file=sys.stderr)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
