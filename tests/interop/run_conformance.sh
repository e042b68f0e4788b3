#!/usr/bin/env bash
# Run the official MCP conformance suites against a running InterLock endpoint.
#
#   run_conformance.sh ENDPOINT [RESULTS_DIR]
#
#   @modelcontextprotocol/conformance 0.1.16 (handshake era):
#       server-initialize, ping, tools-list, dns-rebinding-protection
#   @modelcontextprotocol/conformance 0.2.0-alpha.12 with --spec-version 2026-07-28 (modern):
#       server-stateless, tools-list, dns-rebinding-protection
#       (baseline: expected-failures.yaml, checks that need the suite's own fixture tools)
#
# Set CONFORMANCE_INFORMATIONAL=1 to also run 0.2.0-alpha.12 `--requirements 2026-07-28` (all 50
# scenarios, most needing fixture tools, resources or prompts); it is recorded, never fails the run.
#
# Needs `npm ci` in node/ (run_all.sh does it). Uses Node 22 from the `node` npm package installed
# there, or `node` on PATH when that is 22 or newer. Writes RESULTS_DIR (default results/conformance):
# one directory per suite and scenario with the suite's checks.json and log, and summary.json.
# Prints one line per scenario; exits 1 when any scenario has an unexpected failure.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ENDPOINT="${1:-}"
OUT="${2:-$HERE/results/conformance}"
if [[ -z "$ENDPOINT" ]]; then
  echo "usage: $0 ENDPOINT [RESULTS_DIR]" >&2
  exit 2
fi

NODE_DIR="$HERE/node"
NODE="$NODE_DIR/node_modules/node/bin/node"
if [[ ! -x "$NODE" ]]; then
  if command -v node >/dev/null && [[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 22 ]]; then
    NODE="$(command -v node)"
  else
    echo "run_conformance: Node 22 not found (run 'npm ci' in $NODE_DIR)" >&2
    exit 2
  fi
fi
V01="$NODE_DIR/node_modules/conformance-0.1/dist/index.js"
V02="$NODE_DIR/node_modules/conformance-0.2/dist/index.js"
for f in "$V01" "$V02"; do
  [[ -f "$f" ]] || { echo "run_conformance: $f missing (run 'npm ci' in $NODE_DIR)" >&2; exit 2; }
done

rm -rf "$OUT"
mkdir -p "$OUT"
status=0
: > "$OUT/runs.tsv"

# run SUITE_LABEL SCENARIO CLI [extra args...]
run() {
  local label="$1" scenario="$2" cli="$3"
  shift 3
  local dir="$OUT/$label/$scenario"
  mkdir -p "$dir"
  local t0 t1 rc
  t0=$(date +%s%N)
  NO_COLOR=1 FORCE_COLOR=0 "$NODE" "$cli" server --url "$ENDPOINT" --scenario "$scenario" -o "$dir" "$@" \
    >"$dir/log.txt" 2>&1
  rc=$?
  t1=$(date +%s%N)
  printf '%s\t%s\t%s\t%s\n' "$label" "$scenario" "$rc" "$(( (t1 - t0) / 1000000 ))" >>"$OUT/runs.tsv"
  if [[ $rc -ne 0 ]]; then status=1; fi
}

for s in server-initialize ping tools-list dns-rebinding-protection; do
  run "conformance-0.1.16" "$s" "$V01"
done
for s in server-stateless tools-list dns-rebinding-protection; do
  run "conformance-0.2.0-alpha.12" "$s" "$V02" --spec-version 2026-07-28 --expected-failures "$HERE/expected-failures.yaml"
done
for s in tasks-capability-negotiation tasks-request-headers tasks-dispatch-and-envelope tasks-wire-fields tasks-lifecycle; do
  run "conformance-0.2.0-alpha.12" "$s" "$V02" --spec-version 2026-07-28 --force --expected-failures "$HERE/expected-failures.yaml"
done

if [[ "${CONFORMANCE_INFORMATIONAL:-0}" == "1" ]]; then
  mkdir -p "$OUT/informational"
  NO_COLOR=1 FORCE_COLOR=0 "$NODE" "$V02" server --url "$ENDPOINT" --requirements 2026-07-28 \
    -o "$OUT/informational" >"$OUT/informational/log.txt" 2>&1 || true
fi

# Summarise every checks.json (the suite writes one per scenario, in a timestamped subdirectory).
"$NODE" - "$OUT" "$HERE/expected-failures.yaml" <<'EOF'
const fs = require('fs');
const path = require('path');
const [out, baselineFile] = process.argv.slice(2);
const expected = new Set(
  fs.readFileSync(baselineFile, 'utf8').split('\n')
    .map((l) => l.replace(/#.*/, '').trim()).filter((l) => l.startsWith('- ')).map((l) => l.slice(2).trim()));
const runs = fs.readFileSync(path.join(out, 'runs.tsv'), 'utf8').trim().split('\n').filter(Boolean)
  .map((l) => { const [suite, scenario, rc, secs] = l.split('\t'); return { suite, scenario, rc: +rc, secs: +secs / 1000 }; });
function findChecks(dir) {
  const found = [];
  if (!fs.existsSync(dir)) return found;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) found.push(...findChecks(p));
    else if (e.name === 'checks.json') found.push(p);
  }
  return found;
}
const summary = { endpoint: undefined, scenarios: [] };
for (const r of runs) {
  const checks = findChecks(path.join(out, r.suite, r.scenario)).flatMap((f) => JSON.parse(fs.readFileSync(f, 'utf8')));
  const bad = checks.filter((c) => c.status === 'FAILURE' || c.status === 'WARNING');
  const isExpected = (c) => r.suite.startsWith('conformance-0.2') && expected.has(`${r.scenario}:${c.id}`);
  const entry = {
    suite: r.suite, scenario: r.scenario, exit_code: r.rc, seconds: Math.round(r.secs * 100) / 100,
    passed: checks.filter((c) => c.status === 'SUCCESS').length,
    skipped: checks.filter((c) => c.status === 'SKIPPED').length,
    expected_failures: bad.filter(isExpected).map((c) => c.id),
    failures: bad.filter((c) => !isExpected(c)).map((c) => ({ id: c.id, status: c.status, error: c.errorMessage, details: c.details })),
  };
  entry.ok = r.rc === 0 && entry.failures.filter((f) => f.status === 'FAILURE').length === 0 && checks.length > 0;
  summary.scenarios.push(entry);
  const xf = entry.expected_failures.length ? `, ${entry.expected_failures.length} expected failures (fixture tools)` : '';
  const warn = entry.failures.filter((f) => f.status === 'WARNING').length;
  console.log(`${entry.ok ? 'PASS' : 'FAIL'} ${r.suite} ${r.scenario}: ${entry.passed} passed${xf}` +
    `${warn ? `, ${warn} warnings` : ''}${entry.ok ? '' : `, ${entry.failures.length} unexpected (see ${path.join(out, r.suite, r.scenario, 'log.txt')})`}` +
    ` [${entry.seconds}s]`);
  for (const f of entry.failures) if (!entry.ok) console.log(`    ${f.status} ${f.id}: ${f.error ?? ''}`);
}
const info = path.join(out, 'informational');
if (fs.existsSync(info)) {
  const all = findChecks(info).map((f) => ({ scenario: path.basename(path.dirname(f)).replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, ''), checks: JSON.parse(fs.readFileSync(f, 'utf8')) }));
  summary.informational = all.map(({ scenario, checks }) => ({
    scenario,
    passed: checks.filter((c) => c.status === 'SUCCESS').length,
    failed: checks.filter((c) => c.status === 'FAILURE').map((c) => ({ id: c.id, error: c.errorMessage })),
    warnings: checks.filter((c) => c.status === 'WARNING').map((c) => ({ id: c.id, error: c.errorMessage })),
  }));
  const p = summary.informational.filter((s) => s.failed.length === 0).length;
  console.log(`INFO conformance-0.2.0-alpha.12 --requirements 2026-07-28: ${p}/${summary.informational.length} scenarios without failures (informational; see ${info})`);
}
fs.writeFileSync(path.join(out, 'summary.json'), JSON.stringify(summary, null, 2));
EOF
[[ $? -eq 0 ]] || status=1
exit $status
