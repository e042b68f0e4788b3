#!/usr/bin/env bash
# InterLock interoperability and conformance run against a running gateway.
#
#   run_all.sh ENDPOINT AGENT_KEY
#
# Installs what is missing (a venv at .venv with requirements.txt; `npm ci` in node/, which also
# brings Node 22 as the `node` npm package), then runs:
#   - wire_checks.py                   (raw-HTTP checks of the MCP-WIRE rules: edge cases no SDK sends)
#   - python_client.py --mode auto     (Python mcp 2.3.0, 2026-07-28 via server/discover)
#   - python_client.py --mode legacy   (Python mcp 2.3.0, initialize handshake)
#   - node/ts_client.mjs               (TypeScript SDK 1.32.2, initialize handshake)
#   - rmcp_client (initialize, discover) when its binary exists (see below)
#   - python_stdio.py auto|legacy      (Python mcp 2.3.0 launching `interlock stdio`, when
#                                       INTEROP_INTERLOCK_BIN and INTEROP_STDIO_CONFIG are set)
#   - node/ts_tasks.mjs                (TypeScript SDK 1.32.2's tasks client: held writes as MCP Tasks,
#                                       created on ENDPOINT and followed on INTEROP_TASKS_OTHER_ENDPOINT,
#                                       decided with INTEROP_APPROVER_KEY; when both are set)
#   - python_tasks.py                  (Python mcp 1.30.0's tasks client, in its own venv .venv-tasks
#                                       from requirements-tasks.txt: the same, when both are set)
#   - run_conformance.sh               (conformance 0.1.16 and 0.2.0-alpha.12 / 2026-07-28)
# With INTEROP_OAUTH_TOKEN, INTEROP_OAUTH_ISSUER, INTEROP_OAUTH_SCOPE and INTEROP_OAUTH_ENDPOINT
# set (ENDPOINT's gateway has [oauth] on with resource = ENDPOINT; INTEROP_OAUTH_ENDPOINT is one
# with oauth.challenge_unauthenticated, its resource = itself), also:
#   - python_client.py and node/ts_client.mjs with the access token as their bearer credential
#   - python_oauth.py and node/ts_oauth.mjs against INTEROP_OAUTH_ENDPOINT: each SDK's OAuth
#     discovery from a bare 401 (protected-resource metadata, authorization server metadata,
#     registration, the redirect with resource = that endpoint and the challenged scope)
# Quiet on success: one line per step and a closing "N passed, N failed" line. Full output goes to
# results/ (INTEROP_RESULTS to change). Exits 1 when any step fails, 2 on a setup error.
#
# rmcp: the Rust client is a separate crate (rmcp/) whose first build takes minutes, so it is only
# built when INTEROP_BUILD_RMCP=1 (cargo build -j 1). Its binary is looked up in
# ${INTEROP_RMCP_TARGET:-rmcp/target}/debug/rmcp_client; without one the step is reported skipped.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ENDPOINT="${1:-}"
KEY="${2:-}"
if [[ -z "$ENDPOINT" || -z "$KEY" ]]; then
  echo "usage: $0 ENDPOINT AGENT_KEY" >&2
  exit 2
fi
RESULTS="${INTEROP_RESULTS:-$HERE/results}"
RMCP_TARGET="${INTEROP_RMCP_TARGET:-$HERE/rmcp/target}"
STEP_TIMEOUT="${INTEROP_STEP_TIMEOUT:-300}"
mkdir -p "$RESULTS"

setup_fail() {
  echo "run_all: setup failed: $1 (log: $2)" >&2
  tail -n 20 "$2" >&2
  exit 2
}

# --- install what is missing -------------------------------------------------------------------
PY="$HERE/.venv/bin/python"
want_py="$(sha256sum "$HERE/requirements.txt" | cut -d' ' -f1)"
if [[ ! -x "$PY" || "$(cat "$HERE/.venv/.requirements.sha256" 2>/dev/null)" != "$want_py" ]]; then
  {
    python3 -m venv "$HERE/.venv" &&
      "$PY" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements.txt" &&
      echo "$want_py" >"$HERE/.venv/.requirements.sha256"
  } >"$RESULTS/setup-python.log" 2>&1 || setup_fail "python venv" "$RESULTS/setup-python.log"
fi

# The Python SDK's tasks client lives only in the mcp 1.x line: a venv of its own.
PY_TASKS="$HERE/.venv-tasks/bin/python"
want_py_tasks="$(sha256sum "$HERE/requirements-tasks.txt" | cut -d' ' -f1)"
if [[ ! -x "$PY_TASKS" || "$(cat "$HERE/.venv-tasks/.requirements.sha256" 2>/dev/null)" != "$want_py_tasks" ]]; then
  {
    python3 -m venv "$HERE/.venv-tasks" &&
      "$PY_TASKS" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements-tasks.txt" &&
      echo "$want_py_tasks" >"$HERE/.venv-tasks/.requirements.sha256"
  } >"$RESULTS/setup-python-tasks.log" 2>&1 || setup_fail "python tasks venv" "$RESULTS/setup-python-tasks.log"
fi

NODE_DIR="$HERE/node"
want_npm="$(sha256sum "$NODE_DIR/package-lock.json" | cut -d' ' -f1)"
if [[ ! -d "$NODE_DIR/node_modules" || "$(cat "$NODE_DIR/node_modules/.lock.sha256" 2>/dev/null)" != "$want_npm" ]]; then
  (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error && echo "$want_npm" >node_modules/.lock.sha256) \
    >"$RESULTS/setup-node.log" 2>&1 || setup_fail "npm ci" "$RESULTS/setup-node.log"
fi
NODE="$NODE_DIR/node_modules/node/bin/node"
[[ -x "$NODE" ]] || NODE="$(command -v node)"

if [[ "${INTEROP_BUILD_RMCP:-0}" == "1" ]]; then
  (cd "$HERE/rmcp" && CARGO_TARGET_DIR="$RMCP_TARGET" cargo build -j 1 --locked) \
    >"$RESULTS/setup-rmcp.log" 2>&1 || setup_fail "rmcp build" "$RESULTS/setup-rmcp.log"
fi

# --- run ---------------------------------------------------------------------------------------
passed=0
failed=0
skipped=0

# step NAME COMMAND...: stdout to results/NAME.json (the clients' JSON summary lines; the
# conformance step's per-scenario lines go to NAME.txt), stderr to NAME.log
step() {
  local name="$1"
  shift
  local t0 t1 rc out="$RESULTS/$name.json"
  [[ "$name" == conformance ]] && out="$RESULTS/$name.txt"
  t0=$(date +%s%N)
  timeout "$STEP_TIMEOUT" "$@" >"$out" 2>"$RESULTS/$name.log"
  rc=$?
  t1=$(date +%s%N)
  local ms=$(((t1 - t0) / 1000000))
  if [[ $rc -eq 0 ]]; then
    passed=$((passed + 1))
    local note=""
    if grep -q '"known_client_limitations": *\["' "$out" 2>/dev/null; then
      note=" (known client limitation, see docs/interop.md)"
    fi
    printf 'PASS %-28s %d.%03ds%s\n' "$name" $((ms / 1000)) $((ms % 1000)) "$note"
  else
    failed=$((failed + 1))
    printf 'FAIL %-28s %d.%03ds (exit %d; %s)\n' "$name" $((ms / 1000)) $((ms % 1000)) "$rc" "$RESULTS/$name.log"
    if [[ -s "$RESULTS/$name.log" ]]; then
      sed -n '1,40p' "$RESULTS/$name.log" | sed 's/^/    /'
    else
      grep -v '^PASS' "$out" | sed -n '1,40p' | cut -c1-600 | sed 's/^/    /'
    fi
  fi
}

step wire-checks "$PY" "$HERE/wire_checks.py" --endpoint "$ENDPOINT" --key "$KEY"
step python-mcp-auto "$PY" "$HERE/python_client.py" --endpoint "$ENDPOINT" --key "$KEY" --mode auto
step python-mcp-legacy "$PY" "$HERE/python_client.py" --endpoint "$ENDPOINT" --key "$KEY" --mode legacy
step typescript-sdk "$NODE" "$NODE_DIR/ts_client.mjs" --endpoint "$ENDPOINT" --key "$KEY"
RMCP_BIN="$RMCP_TARGET/debug/rmcp_client"
if [[ -x "$RMCP_BIN" ]]; then
  step rmcp-initialize "$RMCP_BIN" --endpoint "$ENDPOINT" --key "$KEY" --mode initialize
  step rmcp-discover "$RMCP_BIN" --endpoint "$ENDPOINT" --key "$KEY" --mode discover
else
  skipped=$((skipped + 2))
  echo "SKIP rmcp (no binary at $RMCP_BIN; INTEROP_BUILD_RMCP=1 builds it)"
fi
# The Python SDK launching `interlock stdio` itself (needs the binary and a config file).
if [[ -n "${INTEROP_INTERLOCK_BIN:-}" && -n "${INTEROP_STDIO_CONFIG:-}" ]]; then
  for mode in auto legacy; do
    step "python-mcp-stdio-$mode" "$PY" "$HERE/python_stdio.py" --interlock "$INTEROP_INTERLOCK_BIN" \
      --config "$INTEROP_STDIO_CONFIG" --key "$KEY" --mode "$mode"
  done
else
  skipped=$((skipped + 2))
  echo "SKIP python-mcp-stdio (set INTEROP_INTERLOCK_BIN and INTEROP_STDIO_CONFIG)"
fi
if [[ -n "${INTEROP_OAUTH_TOKEN:-}" && -n "${INTEROP_OAUTH_ISSUER:-}" && -n "${INTEROP_OAUTH_SCOPE:-}" &&
      -n "${INTEROP_OAUTH_ENDPOINT:-}" ]]; then
  step python-mcp-token "$PY" "$HERE/python_client.py" --endpoint "$ENDPOINT" --key "$INTEROP_OAUTH_TOKEN" --mode auto
  step typescript-sdk-token "$NODE" "$NODE_DIR/ts_client.mjs" --endpoint "$ENDPOINT" --key "$INTEROP_OAUTH_TOKEN"
  step python-mcp-oauth-discovery "$PY" "$HERE/python_oauth.py" --endpoint "$INTEROP_OAUTH_ENDPOINT" \
    --issuer "$INTEROP_OAUTH_ISSUER" --scope "$INTEROP_OAUTH_SCOPE"
  step typescript-sdk-oauth-discovery "$NODE" "$NODE_DIR/ts_oauth.mjs" --endpoint "$INTEROP_OAUTH_ENDPOINT" \
    --issuer "$INTEROP_OAUTH_ISSUER" --scope "$INTEROP_OAUTH_SCOPE"
else
  skipped=$((skipped + 4))
  echo "SKIP oauth (set INTEROP_OAUTH_TOKEN, INTEROP_OAUTH_ISSUER, INTEROP_OAUTH_SCOPE and INTEROP_OAUTH_ENDPOINT)"
fi
# Held calls as MCP Tasks, through the TypeScript SDK's tasks client, across two replicas.
if [[ -n "${INTEROP_TASKS_OTHER_ENDPOINT:-}" && -n "${INTEROP_APPROVER_KEY:-}" ]]; then
  step typescript-sdk-tasks "$NODE" "$NODE_DIR/ts_tasks.mjs" --endpoint "$ENDPOINT" \
    --other "$INTEROP_TASKS_OTHER_ENDPOINT" --key "$KEY" --approver-key "$INTEROP_APPROVER_KEY"
  step python-mcp-tasks "$PY_TASKS" "$HERE/python_tasks.py" --endpoint "$ENDPOINT" \
    --other "$INTEROP_TASKS_OTHER_ENDPOINT" --key "$KEY" --approver-key "$INTEROP_APPROVER_KEY"
else
  skipped=$((skipped + 2))
  echo "SKIP typescript-sdk-tasks (set INTEROP_TASKS_OTHER_ENDPOINT and INTEROP_APPROVER_KEY)"
fi
step conformance "$HERE/run_conformance.sh" "$ENDPOINT" "$RESULTS/conformance"

if [[ $skipped -gt 0 ]]; then
  echo "interop: $passed passed, $failed failed, $skipped skipped"
else
  echo "interop: $passed passed, $failed failed"
fi
[[ $failed -eq 0 ]]
