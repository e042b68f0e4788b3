#!/usr/bin/env node
// OAuth discovery of the official TypeScript MCP SDK (@modelcontextprotocol/sdk 1.32.2) against InterLock.
//
// Connects with no credential and an OAuthClientProvider, as an application that signs its users in
// would, and calls a tool. The gateway answers 401 with `WWW-Authenticate: Bearer resource_metadata="…"`; the SDK must read
// the protected-resource metadata (RFC 9728), the authorization server metadata it names (RFC 8414),
// register (RFC 7591) and redirect to the authorization endpoint with `resource` = the MCP endpoint
// (RFC 8707) and the challenged scope. The redirect is captured; the SDK then stops with UnauthorizedError.
//
// Usage: node ts_oauth.mjs --endpoint URL --issuer ISSUER_URL --scope SCOPE
// Prints one JSON summary line; exits 1 when a check fails.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
if (!args.endpoint || !args.issuer || !args.scope) {
  console.error('usage: node ts_oauth.mjs --endpoint URL --issuer ISSUER_URL --scope SCOPE');
  process.exit(2);
}
const issuer = args.issuer.replace(/\/$/, '');
const requested = [];
const redirects = [];
let client = undefined;
let verifier = undefined;

const provider = {
  get redirectUrl() { return 'http://127.0.0.1:9/callback'; },
  get clientMetadata() {
    return { client_name: 'interlock-interop', redirect_uris: ['http://127.0.0.1:9/callback'],
             grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
             token_endpoint_auth_method: 'none' };
  },
  clientInformation() { return client; },
  saveClientInformation(info) { client = info; },
  tokens() { return undefined; },
  saveTokens() {},
  redirectToAuthorization(url) { redirects.push(url.toString()); },
  saveCodeVerifier(v) { verifier = v; },
  codeVerifier() { return verifier; },
};

const recordingFetch = async (url, init = {}) => {
  requested.push(`${(init.method || 'GET').toUpperCase()} ${url.toString()}`);
  return fetch(url, init);
};

let stoppedBy = null;
try {
  const transport = new StreamableHTTPClientTransport(new URL(args.endpoint), { authProvider: provider, fetch: recordingFetch });
  const mcp = new Client({ name: 'interlock-interop-oauth', version: '1.0.0' });
  await mcp.connect(transport);
  // Connecting and listing tools need no credential; calling one does.
  await mcp.callTool({ name: 'interlock_list_sources', arguments: {} });
  await mcp.close();
} catch (e) {
  stoppedBy = `${e?.name}: ${e?.message}`.slice(0, 300);
}

const endpoint = new URL(args.endpoint);
const prm = `GET ${endpoint.origin}/.well-known/oauth-protected-resource${endpoint.pathname}`;
const asm = `GET ${issuer}/.well-known/oauth-authorization-server`;
const checks = [];
const check = (name, ok, detail) => checks.push({ name, ok: !!ok, ...(detail === undefined ? {} : { detail }) });
check('read-protected-resource-metadata', requested.includes(prm), requested);
check('read-authorization-server-metadata', requested.includes(asm), requested);
check('registered', requested.includes(`POST ${issuer}/register`), requested);
const redirect = redirects[0] ? new URL(redirects[0]) : null;
check('redirected-to-issuer', redirect && `${redirect.origin}${redirect.pathname}` === `${issuer}/authorize`, redirects);
check('resource-is-the-endpoint', redirect?.searchParams.get('resource') === args.endpoint, redirect?.searchParams.get('resource'));
check('scope-from-the-challenge', (redirect?.searchParams.get('scope') || '').split(' ').includes(args.scope), redirect?.searchParams.get('scope'));
const failed = checks.filter((c) => !c.ok);
console.log(JSON.stringify({ client: 'typescript-sdk-oauth', ok: failed.length === 0, checks, stopped_by: stoppedBy }));
if (failed.length) console.error(JSON.stringify(checks, null, 2));
process.exit(failed.length ? 1 : 0);
