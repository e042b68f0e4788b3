//! `tools call --task`: a write held for approval is waited for as an MCP task, with a
//! progress line on stderr, over HTTP (2026-07-28) and over the stdio child (2025-11-25);
//! its output is the result the approved write produced, and a rejection ends it with the
//! refusal and that class's exit code.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{gateway, Via};

/// The approver's decision on approval `id`, through the gateway's admin API.
fn decide(id: &str, verb: &str) {
    let g = gateway();
    let url = format!(
        "{}/admin/approvals/{id}/{verb}",
        g.endpoint.trim_end_matches("/mcp")
    );
    let status = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            reqwest::Client::new()
                .post(url)
                .bearer_auth(&g.approver_key)
                .json(&serde_json::json!({"reason": "client test"}))
                .send()
                .await
                .expect("decide")
                .status()
        });
    assert!(status.is_success(), "{verb} {id}: {status}");
}

/// Runs `tools call interlock_query --task` for `sql`; once the progress line says the task
/// is working, decides it with `verb`; returns the exit code, stdout and every stderr line.
fn held(via: Via, version: &str, sql: &str, verb: &str) -> (i32, Value, Vec<String>) {
    let g = gateway();
    let arguments = serde_json::json!({"source_id": "shop", "sql": sql}).to_string();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_interlock"));
    cmd.args(["client", "tools", "call", "interlock_query", "--task"])
        .args(["--arguments", &arguments, "--protocol-version", version])
        .args(["--max-timeout", "60s"])
        .env("INTERLOCK_API_KEY", &g.agent_key)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match via {
        Via::Http => {
            cmd.args(["--endpoint", &g.endpoint]);
        }
        Via::Stdio => {
            cmd.arg("--server-binary")
                .arg(&g.binary)
                .arg("--server-config")
                .arg(&g.config);
        }
    }
    let mut child = cmd.spawn().expect("client");
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let started = Instant::now();
    let mut lines = Vec::new();
    let mut decided = false;
    for line in stderr.lines() {
        let line = line.expect("stderr line");
        if !decided && line.contains(": working: waiting for") {
            let id = line
                .split("task ")
                .nth(1)
                .and_then(|rest| rest.split(':').next())
                .expect("task id")
                .to_owned();
            decide(&id, verb);
            decided = true;
        }
        lines.push(line);
        assert!(started.elapsed() < Duration::from_secs(60), "{lines:?}");
    }
    let out = child.wait_with_output().expect("client output");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let parsed = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}\nstderr: {lines:?}"));
    assert!(
        decided,
        "no progress line said the task was working: {lines:?}"
    );
    (out.status.code().unwrap_or(-1), parsed, lines)
}

#[test]
fn a_held_write_is_waited_for_and_its_result_printed() {
    for (via, version, order) in [
        (Via::Http, "2026-07-28", 31),
        (Via::Stdio, "2025-11-25", 32),
    ] {
        let sql = format!("UPDATE public.orders SET status = 'held' WHERE id = {order}");
        let (code, out, lines) = held(via, version, &sql, "approve");
        assert_eq!(code, 0, "{via:?} {out} {lines:?}");
        let text = out["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        let effect: Value = serde_json::from_str(text).unwrap_or_default();
        assert_eq!(effect["status"], "executed", "{via:?}: {out}");
        assert_eq!(effect["rows_affected"], 1, "{via:?}: {out}");
        assert!(
            lines.iter().any(|l| l.contains(": completed")),
            "{via:?}: {lines:?}"
        );
    }
}

#[test]
fn a_rejected_task_ends_with_the_refusal() {
    let sql = "UPDATE public.orders SET status = 'held' WHERE id = 33";
    let (code, out, lines) = held(Via::Http, "2025-11-25", sql, "reject");
    assert_eq!(code, 1, "a tool error in 2025-11-25: {out} {lines:?}");
    assert_eq!(
        out["result"]["structuredContent"]["code"], "approval_rejected",
        "{out}"
    );
    let sql = "UPDATE public.orders SET status = 'held' WHERE id = 34";
    let (code, out, _) = held(Via::Http, "2026-07-28", sql, "reject");
    assert_eq!(code, 4, "a JSON-RPC error in 2026-07-28: {out}");
    assert_eq!(out["error"]["data"]["code"], "approval_rejected", "{out}");
}
