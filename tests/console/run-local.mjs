#!/usr/bin/env node
// A local stand-in for the Rust harness, for working on the console: starts `interlock dev`,
// runs the three phases of console.spec.mjs, and simulates shop's database outage by pointing
// the shop source at a dead port (PATCH /admin/sources/shop {"port": 1}) instead of stopping
// PostgreSQL (the demo's shop database shares its cluster with the control database, so it
// cannot be stopped alone here). See README.md.
//
//   node tests/console/run-local.mjs --bin /path/to/interlock [--artifacts DIR] [--port N]
//        [--console-dir src/http/console]   (serve the console from disk: no rebuild needed)

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const arg = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const bin = arg("--bin", process.env.INTERLOCK_BIN || "target/debug/interlock");
const artifacts = path.resolve(arg("--artifacts", path.join(HERE, "artifacts")));
const consoleDir = arg("--console-dir", null);
const work = fs.mkdtempSync(path.join(os.tmpdir(), "il-console-local-"));
fs.chmodSync(work, 0o755); // `interlock dev` as root runs PostgreSQL as an unprivileged user, who must reach the data dir
const credsPath = path.join(work, "creds.json");

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** fetch without connection reuse (a pooled socket closed by the idle gateway fails the next call). */
function fetchFresh(url, init = {}) {
  return fetch(url, { ...init, headers: { ...(init.headers || {}), Connection: "close" } });
}

async function main() {
  const port = Number(arg("--port", 0)) || (await freePort());
  const base = `http://127.0.0.1:${port}`;
  const env = { ...process.env };
  if (consoleDir) env.INTERLOCK_CONSOLE_DIR = path.resolve(consoleDir);
  const gw = spawn(bin, ["dev", "--data-dir", path.join(work, "dev"), "--port", String(port), "--credentials-file", credsPath], { env, stdio: ["ignore", "pipe", "pipe"] });
  const logFile = fs.createWriteStream(path.join(work, "gateway.log"));
  gw.stdout.pipe(logFile);
  gw.stderr.pipe(logFile);
  let exited = false;
  gw.on("exit", () => { exited = true; });
  gw.on("error", (e) => { exited = true; process.stderr.write(`run-local: cannot start ${bin}: ${e.message} (pass --bin)\n`); });
  const stop = async () => {
    if (!exited) gw.kill("SIGTERM");
    for (let i = 0; i < 100 && !exited; i++) await sleep(100);
  };
  process.on("SIGINT", async () => { await stop(); process.exit(130); });

  const results = [];
  try {
    for (let i = 0; ; i++) {
      if (exited) throw new Error(`the gateway exited; see ${path.join(work, "gateway.log")}`);
      if (i > 600) throw new Error("the gateway did not become ready within 60 s");
      if (fs.existsSync(credsPath)) {
        try {
          const r = await fetchFresh(`${base}/readyz`);
          if (r.ok) break;
        } catch { /* not yet */ }
      }
      await sleep(100);
    }
    const creds = JSON.parse(fs.readFileSync(credsPath, "utf8"));
    const patchShop = async (body) => {
      const r = await fetchFresh(`${base}/admin/sources/shop`, { method: "PATCH", headers: { Authorization: `Bearer ${creds.operator_key}`, "Content-Type": "application/json" }, body: JSON.stringify(body) });
      if (!r.ok) throw new Error(`PATCH /admin/sources/shop answered ${r.status}: ${await r.text()}`);
      return r.json();
    };
    const realPort = Number(new URL(creds.sources.shop.dsn).port);
    if (!realPort) throw new Error("no port in the shop DSN of the credentials file");

    const run = (phase) => {
      process.stderr.write(`\n=== phase ${phase}\n`);
      const r = spawnSync(process.execPath, [path.join(HERE, "console.spec.mjs"), "--base", base, "--creds", credsPath, "--phase", phase, "--artifacts", artifacts], { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8" });
      const line = (r.stdout || "").trim().split("\n").pop();
      process.stdout.write(`${line}\n`);
      let parsed = null;
      try { parsed = JSON.parse(line); } catch { /* reported below */ }
      results.push({ phase, status: r.status, ok: r.status === 0 && parsed && parsed.ok });
    };

    run("approver");
    const broken = await patchShop({ port: 1 }); // "stop" shop's database
    process.stderr.write(`shop pointed at ${broken.database}\n`);
    run("operator-open");
    const restored = await patchShop({ port: realPort }); // "restart" it
    process.stderr.write(`shop restored to ${restored.database} (was port ${realPort})\n`);
    run("operator-recover");
  } finally {
    await stop();
  }
  const passed = results.filter((r) => r.ok).length;
  process.stderr.write(`\n${results.map((r) => `${r.phase}: ${r.ok ? "passed" : "FAILED"}`).join("\n")}\n`);
  process.stdout.write(`${passed} passed, ${results.length - passed} failed\n`);
  if (passed === results.length) fs.rmSync(work, { recursive: true, force: true });
  else process.stderr.write(`gateway log kept in ${path.join(work, "gateway.log")}\n`);
  process.exit(passed === results.length && results.length === 3 ? 0 : 1);
}

main().catch((e) => {
  process.stderr.write(`run-local: ${e.message}\n`);
  process.exit(2);
});
