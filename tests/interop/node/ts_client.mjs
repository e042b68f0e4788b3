#!/usr/bin/env node
// InterLock interoperability check with the official TypeScript MCP SDK (@modelcontextprotocol/sdk 1.32.2).
//
// Client + StreamableHTTPClientTransport, as an application uses them: `initialize` (2025-11-25, the
// handshake dialect; this SDK has no 2026-07-28 support), `notifications/initialized`, the standalone
// `GET /mcp` the transport always tries (InterLock answers 405, which the SDK must accept), then
// tools/list, interlock_list_sources, interlock_query on demo data, and a refused query whose refusal must
// be a tool result with isError true and structuredContent {status: "forbidden", http_status: 403, code,
// message}. Also: the tools that answer "unavailable" (503) and a wrong key (401), rendered the handshake way.
//
// Usage: node ts_client.mjs --endpoint http://127.0.0.1:8080/mcp --key <agent key> [--trace] [--timeout 30]
// Prints one JSON summary line; exits 1 when a check fails, 2 on a usage or connection error.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';

const SDK_VERSION = JSON.parse(readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url))).version;
const HANDSHAKE = new Set(['2025-03-26', '2025-06-18', '2025-11-25']);
const REQUIRED_TOOLS = ['interlock_query', 'interlock_list_sources'];
const DEMO_SOURCE = 'shop';
const READ_SQL = 'SELECT id, name FROM public.customers WHERE id = 1';
const REFUSED_SQL = 'SELECT amount_cents FROM hr.salaries';
const OTHER_TOOL_ARGS = {
  interlock_describe_access: {},
  interlock_describe_source: { source_id: DEMO_SOURCE },
  interlock_discover: { source_id: DEMO_SOURCE },
  interlock_related_documents: { asset_id: 'interop-probe' },
  interlock_approval_status: { approval_id: '00000000-0000-0000-0000-000000000000' },
};

function parseArgs(argv) {
  const out = { trace: false, timeout: 30 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--trace') out.trace = true;
    else if (a === '--endpoint') out.endpoint = argv[++i];
    else if (a === '--key') out.key = argv[++i];
    else if (a === '--timeout') out.timeout = Number(argv[++i]);
    else if (a === '-h' || a === '--help') {
      console.error('usage: node ts_client.mjs --endpoint URL --key AGENT_KEY [--trace] [--timeout SECONDS]');
      process.exit(0);
    } else {
      console.error(`unknown argument: ${a}`);
      process.exit(2);
    }
  }
  if (!out.endpoint || !out.key) {
    console.error('usage: node ts_client.mjs --endpoint URL --key AGENT_KEY [--trace] [--timeout SECONDS]');
    process.exit(2);
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
const httpLog = []; // every HTTP exchange: method, status (kept for the summary: GET /mcp must be 405)

function tracingFetch(trace) {
  return async (url, init = {}) => {
    const method = (init.method || 'GET').toUpperCase();
    if (trace) {
      const headers = {};
      new Headers(init.headers || {}).forEach((v, k) => {
        headers[k] = k === 'authorization' ? '<redacted>' : v;
      });
      console.error(`>>> ${method} ${url}\n>>> headers ${JSON.stringify(headers)}\n>>> body ${init.body ?? ''}`);
    }
    const res = await fetch(url, init);
    httpLog.push({ method, status: res.status, contentType: res.headers.get('content-type') });
    if (trace) {
      const h = {};
      res.headers.forEach((v, k) => (h[k] = v));
      console.error(`<<< ${res.status} ${JSON.stringify(h)}`);
      const ct = res.headers.get('content-type') || '';
      if (!ct.includes('text/event-stream')) {
        const text = await res.clone().text();
        console.error(`<<< body ${text.slice(0, 4000)}`);
      }
    }
    return res;
  };
}

function connect(key) {
  const client = new Client({ name: 'interlock-interop-ts', version: '0.0.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(args.endpoint), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
    fetch: tracingFetch(args.trace),
  });
  return { client, transport };
}

const text = (res) => (res?.content || []).find((c) => c.type === 'text')?.text ?? '';
const reqOpts = { timeout: args.timeout * 1000 };

function outcome(res, err) {
  if (err) {
    if (!(err instanceof McpError)) throw err;
    return { form: 'jsonrpc-error', code: err.code, status: err.data?.status, key: err.data?.code };
  }
  const sc = res.structuredContent || {};
  return { form: 'tool-result', isError: res.isError, status: sc.status, http_status: sc.http_status, key: sc.code };
}

async function call(client, name, a) {
  try {
    return outcome(await client.callTool({ name, arguments: a }, undefined, reqOpts));
  } catch (err) {
    return outcome(undefined, err);
  }
}

async function main() {
  const checks = [];
  const record = (name, ok, detail) => {
    checks.push(detail === undefined ? { name, ok: !!ok } : { name, ok: !!ok, detail });
    return ok;
  };
  const summary = { client: 'typescript-sdk', sdk: SDK_VERSION, mode: 'handshake', endpoint: args.endpoint };

  const { client, transport } = connect(args.key);
  await client.connect(transport, reqOpts);
  try {
    const version = transport.protocolVersion;
    summary.protocol_version = version;
    record('negotiated-handshake', HANDSHAKE.has(version), { protocol_version: version });
    const info = client.getServerVersion();
    record('server-info', info?.name === 'interlock', info);
    record('tools-capability', !!client.getServerCapabilities()?.tools, client.getServerCapabilities());
    // The SDK starts the standalone GET stream after `initialized`, asynchronously; give it a moment.
    for (let i = 0; i < 50 && !httpLog.some((e) => e.method === 'GET'); i++) await new Promise((r) => setTimeout(r, 20));
    const gets = httpLog.filter((e) => e.method === 'GET');
    record('get-stream-405', gets.length > 0 && gets.every((e) => e.status === 405), { get_requests: gets });
    record('no-session-id', transport.sessionId === undefined, { sessionId: transport.sessionId });

    const tools = await client.listTools(undefined, reqOpts);
    const names = tools.tools.map((t) => t.name);
    summary.tools = names;
    record('tools-list', REQUIRED_TOOLS.every((n) => names.includes(n)), {
      missing: REQUIRED_TOOLS.filter((n) => !names.includes(n)),
    });

    let res = await client.callTool({ name: 'interlock_list_sources', arguments: {} }, undefined, reqOpts);
    let parsed;
    try { parsed = JSON.parse(text(res)); } catch { parsed = undefined; }
    record('list-sources', res.isError !== true && parsed && typeof parsed === 'object' && DEMO_SOURCE in parsed, {
      isError: res.isError, text: text(res).slice(0, 300),
    });

    res = await client.callTool({ name: 'interlock_query', arguments: { source_id: DEMO_SOURCE, sql: READ_SQL } }, undefined, reqOpts);
    try { parsed = JSON.parse(text(res)); } catch { parsed = undefined; }
    record('query-demo-data', res.isError !== true && Array.isArray(parsed) && parsed.length === 1 && parsed[0].id === 1
      && typeof parsed[0].name === 'string', { isError: res.isError, text: text(res).slice(0, 300) });

    try {
      res = await client.callTool({ name: 'interlock_query', arguments: { source_id: DEMO_SOURCE, sql: REFUSED_SQL } }, undefined, reqOpts);
      const sc = res.structuredContent || {};
      record('refusal-handshake-tool-result', res.isError === true && sc.status === 'forbidden' && sc.http_status === 403
        && typeof sc.code === 'string' && sc.code.length > 0 && typeof sc.message === 'string' && sc.message.length > 0
        && text(res).length > 0, { isError: res.isError, structuredContent: res.structuredContent, text: text(res).slice(0, 300) });
    } catch (err) {
      if (!(err instanceof McpError)) throw err;
      record('refusal-handshake-tool-result', false, { unexpected: 'JSON-RPC error in the handshake dialect', code: err.code, message: err.message, data: err.data });
    }

    const outcomes = {};
    for (const [name, a] of Object.entries(OTHER_TOOL_ARGS)) if (names.includes(name)) outcomes[name] = await call(client, name, a);
    const isUnavailable = (o) => o.form === 'tool-result' && o.isError === true && o.status === 'unavailable' && o.http_status === 503 && o.key === 'unavailable';
    const unavailable = Object.keys(outcomes).filter((n) => isUnavailable(outcomes[n])).sort();
    summary.unavailable_tools = unavailable;
    const misrendered = Object.fromEntries(Object.entries(outcomes).filter(([n, o]) => !unavailable.includes(n)
      && (o.status === 503 || o.status === 'unavailable' || o.http_status === 503)));
    record('unavailable-rendering', Object.keys(misrendered).length === 0, { unavailable, misrendered, outcomes });
  } finally {
    await client.close();
  }

  // A wrong key: the 401 must be a tool result in the handshake dialect.
  const bad = connect('ilk_not_a_valid_key');
  await bad.client.connect(bad.transport, reqOpts);
  try {
    await bad.client.listTools(undefined, reqOpts);
    const o = await call(bad.client, 'interlock_query', { source_id: DEMO_SOURCE, sql: READ_SQL });
    record('unauthorized-handshake-tool-result', o.form === 'tool-result' && o.isError === true && o.status === 'unauthorized'
      && o.http_status === 401 && !!o.key, o);
  } finally {
    await bad.client.close();
  }

  summary.checks = checks;
  summary.failed = checks.filter((c) => !c.ok).map((c) => c.name);
  summary.ok = summary.failed.length === 0;
  return summary;
}

const started = Date.now();
try {
  const summary = await main();
  summary.elapsed_s = (Date.now() - started) / 1000;
  console.log(JSON.stringify(summary));
  for (const c of summary.checks) if (!c.ok) console.error(`typescript-sdk: check ${c.name} FAILED: ${JSON.stringify(c.detail)}`);
  process.exit(summary.ok ? 0 : 1);
} catch (err) {
  const detail = { type: err?.constructor?.name, message: String(err?.message ?? err), code: err?.code, data: err?.data };
  console.log(JSON.stringify({ client: 'typescript-sdk', sdk: SDK_VERSION, endpoint: args.endpoint, ok: false, error: detail,
    elapsed_s: (Date.now() - started) / 1000 }));
  console.error(`typescript-sdk: FAILED: ${detail.type}: ${detail.message}`);
  process.exit(2);
}
