#!/usr/bin/env node
// InterLock's held calls as MCP Tasks, driven by the official TypeScript SDK's experimental tasks
// client (@modelcontextprotocol/sdk 1.32.2, MCP 2025-11-25): a write queued as a task, seen
// `working`, approved by an approver in another session, its result fetched; the same for a
// rejection, an expiry and a cancellation; created on one replica and followed on another.
//
// Usage: node ts_tasks.mjs --endpoint URL --other URL --key AGENT_KEY --approver-key KEY
//   --endpoint  the replica the tasks are created on (its /admin API is where approvers decide)
//   --other     another replica on the same control database, where they are followed
// Prints one JSON summary line; exits 1 when a check fails, 2 on a usage or connection error.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';

const SDK_VERSION = JSON.parse(readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url))).version;

function parseArgs(argv) {
  const out = {};
  const names = { '--endpoint': 'endpoint', '--other': 'other', '--key': 'key', '--approver-key': 'approverKey' };
  for (let i = 0; i < argv.length; i++) {
    const name = names[argv[i]];
    if (!name) {
      console.error(`unknown argument: ${argv[i]}`);
      process.exit(2);
    }
    out[name] = argv[++i];
  }
  if (!out.endpoint || !out.other || !out.key || !out.approverKey) {
    console.error('usage: node ts_tasks.mjs --endpoint URL --other URL --key AGENT_KEY --approver-key KEY');
    process.exit(2);
  }
  return out;
}

const args = parseArgs(process.argv.slice(2));
const checks = [];
function check(name, ok, detail) {
  checks.push({ name, ok: Boolean(ok), ...(ok ? {} : { detail }) });
}

async function connect(endpoint) {
  const client = new Client({ name: 'interlock-tasks-interop', version: '0.0.1' }, { capabilities: { tasks: { list: {}, cancel: {} } } });
  const transport = new StreamableHTTPClientTransport(new URL(endpoint), {
    requestInit: { headers: { Authorization: `Bearer ${args.key}` } },
  });
  await client.connect(transport);
  return client;
}

/** An approver's decision in the console's API (another session, another credential). */
async function decide(id, verb, reason) {
  const base = args.endpoint.replace(/\/mcp$/, '');
  const res = await fetch(`${base}/admin/approvals/${id}/${verb}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${args.approverKey}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ reason }),
  });
  if (!res.ok) throw new Error(`${verb} ${id}: HTTP ${res.status} ${await res.text()}`);
}

const write = (id) => ({ name: 'interlock_query', arguments: { source_id: 'shop', sql: `UPDATE public.orders SET status = 'held' WHERE id = ${id}` } });

/** A write queued as a task on `client`: the created task. */
async function queue(client, orderId, ttl) {
  const created = await client.request({ method: 'tools/call', params: write(orderId) }, CreateTaskResultSchema, { task: { ttl } });
  return created.task;
}

async function main() {
  const a = await connect(args.endpoint);
  const b = await connect(args.other);
  const caps = a.getServerCapabilities();
  check('server offers tasks for tools/call', caps?.tasks?.requests?.tools?.call !== undefined, caps);
  const { tools } = await a.listTools();
  const query = tools.find((t) => t.name === 'interlock_query');
  check('interlock_query is task-capable', query?.execution?.taskSupport === 'optional', query?.execution);

  // Approved: created on A with the SDK's stream, followed on B, its result fetched on B.
  let approvedId = null;
  const seen = [];
  let result = null;
  for await (const m of a.experimental.tasks.callToolStream(write(41), CallToolResultSchema, { task: { ttl: 60000 } })) {
    seen.push(m.type);
    if (m.type === 'taskCreated') {
      approvedId = m.task.taskId;
      const onB = await b.experimental.tasks.getTask(approvedId);
      check('B sees the task working', onB.status === 'working' && /waiting for 1 of 1 approvals; .*do not retry/.test(onB.statusMessage), onB);
      await decide(approvedId, 'approve', 'interop: fine');
    } else if (m.type === 'result') {
      result = m.result;
    } else if (m.type === 'error') {
      check('approved task streams without error', false, String(m.error));
    }
  }
  check('stream: created, then result', seen[0] === 'taskCreated' && seen.at(-1) === 'result', seen);
  const effect = result && JSON.parse(result.content[0].text);
  check('the approved write executed', result?.isError === false && effect?.status === 'executed' && effect?.rows_affected === 1, result);
  const onB = await b.experimental.tasks.getTaskResult(approvedId, CallToolResultSchema);
  check('B returns the executed result', JSON.stringify(onB.content) === JSON.stringify(result?.content), onB);
  check('the result names its task', onB._meta?.['io.modelcontextprotocol/related-task']?.taskId === approvedId, onB._meta);

  // Rejected: the stream ends in an error; the task is failed and its result the refusal.
  let rejectedError = null;
  let rejectedId = null;
  for await (const m of b.experimental.tasks.callToolStream(write(42), CallToolResultSchema, { task: { ttl: 60000 } })) {
    if (m.type === 'taskCreated') {
      rejectedId = m.task.taskId;
      await decide(rejectedId, 'reject', 'interop: not today');
    } else if (m.type === 'error') rejectedError = m.error;
  }
  check('a rejected task ends the stream failed', rejectedError !== null && /failed/.test(String(rejectedError)), String(rejectedError));
  const rejected = await a.experimental.tasks.getTask(rejectedId);
  check('the rejected task is failed, with why', rejected.status === 'failed' && /not today/.test(rejected.statusMessage ?? ''), rejected);
  const refusal = await a.experimental.tasks.getTaskResult(rejectedId, CallToolResultSchema);
  check('its result is the refusal', refusal.isError === true && refusal.structuredContent?.code === 'approval_rejected', refusal);

  // Expired: a task of 2 s makes its approval expire then.
  const expiring = await queue(a, 43, 2000);
  const expired = await b.experimental.tasks.getTaskResult(expiring.taskId, CallToolResultSchema);
  check('an expired task answers approval_expired', expired.structuredContent?.code === 'approval_expired', expired);
  check('and is failed', (await b.experimental.tasks.getTask(expiring.taskId)).status === 'failed');

  // Cancelled: the requester withdraws the pending approval.
  const cancelling = await queue(a, 44, 60000);
  const cancelled = await b.experimental.tasks.cancelTask(cancelling.taskId);
  check('cancelTask answers cancelled', cancelled.status === 'cancelled', cancelled);
  check('and it stays cancelled', (await a.experimental.tasks.getTask(cancelling.taskId)).status === 'cancelled');
  let again = null;
  try {
    await a.experimental.tasks.cancelTask(cancelling.taskId);
  } catch (e) {
    again = e;
  }
  check('cancelling it again is -32602', again?.code === -32602, String(again));

  // Listed, newest first, on either replica.
  const listed = (await b.experimental.tasks.listTasks()).tasks.map((t) => t.taskId);
  const ours = [cancelling.taskId, expiring.taskId, rejectedId, approvedId];
  check('tasks/list has every task, newest first', JSON.stringify(listed.filter((id) => ours.includes(id))) === JSON.stringify(ours), listed);

  let unknown = null;
  try {
    await b.experimental.tasks.getTask('00000000-0000-0000-0000-000000000000');
  } catch (e) {
    unknown = e;
  }
  check('an unknown task is -32602', unknown?.code === -32602, String(unknown));

  await a.close();
  await b.close();
  const ok = checks.every((c) => c.ok);
  console.log(JSON.stringify({ client: 'typescript-sdk-tasks', sdk: SDK_VERSION, ok, checks }));
  process.exit(ok ? 0 : 1);
}

main().catch((e) => {
  console.log(JSON.stringify({ client: 'typescript-sdk-tasks', sdk: SDK_VERSION, ok: false, error: String(e?.stack ?? e), checks }));
  process.exit(2);
});
