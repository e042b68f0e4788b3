//! `tools call --task`: waiting for a task to end, the way each revision says.
//!
//! A `tools/call` answered with a task (2025-11-25 `{task: Task}`, 2026-07-28
//! `{resultType: "task", …}`) is polled with `tasks/get` at the server's `pollInterval` /
//! `pollIntervalMs` (between 100 ms and 10 s), each change of status or message reported
//! through `progress` (a line on stderr), until it ends. Its final answer is then the call's:
//! 2026-07-28 inlines `result` or `error` in `tasks/get`; 2025-11-25 fetches `tasks/result`.
//! SIGINT or `--max-timeout` stop the wait, never the task (its id is in the error).

use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use crate::client::error::{ClientError, RpcFailure};
use crate::client::session::{Dialect, Session};

/// The shortest and longest pause between two polls.
const POLL_BOUNDS: (u64, u64) = (100, 10_000);

/// What a task's call finally answered.
#[derive(Debug)]
pub enum Ended {
    /// A result (to classify and print like any `tools/call` result).
    Result(Box<RawValue>),
    /// A JSON-RPC error.
    Error(RpcFailure),
}

/// The task a `tools/call` result is, if it is one: its fields (flat, in either revision).
pub fn task_of(result: &Value, dialect: &Dialect) -> Option<Map<String, Value>> {
    let task = match dialect {
        Dialect::Modern if result.get("resultType") == Some(&json!("task")) => result,
        Dialect::Handshake(_) => result.get("task")?,
        Dialect::Modern => return None,
    };
    task.as_object()
        .filter(|t| t.get("taskId").is_some_and(Value::is_string))
        .cloned()
}

fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// The pause a task asks for, within [`POLL_BOUNDS`].
fn pause_of(task: &Map<String, Value>) -> Duration {
    let asked = task
        .get("pollIntervalMs")
        .or_else(|| task.get("pollInterval"))
        .and_then(Value::as_u64)
        .unwrap_or(1_000);
    Duration::from_millis(asked.clamp(POLL_BOUNDS.0, POLL_BOUNDS.1))
}

/// One line about where a task stands.
pub fn progress_line(task: &Map<String, Value>) -> String {
    let id = task.get("taskId").and_then(Value::as_str).unwrap_or("?");
    let status = task.get("status").and_then(Value::as_str).unwrap_or("?");
    match task.get("statusMessage").and_then(Value::as_str) {
        Some(message) => format!("task {id}: {status}: {message}"),
        None => format!("task {id}: {status}"),
    }
}

/// Waits for `task` (as the call answered it) to end, reporting each change to `progress`.
pub async fn follow(
    session: &mut Session,
    mut task: Map<String, Value>,
    progress: &mut dyn FnMut(&str),
) -> Result<Ended, ClientError> {
    let id = task
        .get("taskId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut said = progress_line(&task);
    progress(&said);
    let still = |e: ClientError| match e {
        ClientError::Interrupted => ClientError::Interrupted,
        ClientError::Timeout(why) => ClientError::Timeout(format!(
            "{why}; task {id} goes on (follow it with tasks/get)"
        )),
        other => other,
    };
    while !is_terminal(task.get("status").and_then(Value::as_str).unwrap_or("")) {
        session
            .pause(pause_of(&task), "tasks/get")
            .await
            .map_err(still)?;
        let mut params = Map::new();
        params.insert("taskId".into(), json!(id));
        let raw = session.request("tasks/get", params).await.map_err(still)?;
        task = serde_json::from_str(raw.get())
            .map_err(|e| ClientError::InvalidResult(format!("tasks/get: {e}")))?;
        let line = progress_line(&task);
        if line != said {
            progress(&line);
            said = line;
        }
    }
    if *session.dialect() == Dialect::Modern {
        return inline(&task);
    }
    let mut params = Map::new();
    params.insert("taskId".into(), json!(id));
    match session.request("tasks/result", params).await {
        Ok(raw) => Ok(Ended::Result(raw)),
        Err(ClientError::Rpc(failure)) => Ok(Ended::Error(failure)),
        Err(other) => Err(other),
    }
}

/// 2026-07-28: the ended task's inlined `result` or `error`.
fn inline(task: &Map<String, Value>) -> Result<Ended, ClientError> {
    let raw = |v: &Value| {
        serde_json::value::to_raw_value(v)
            .map_err(|e| ClientError::InvalidResult(format!("tasks/get: {e}")))
    };
    if let Some(result) = task.get("result") {
        return Ok(Ended::Result(raw(result)?));
    }
    if let Some(error) = task.get("error") {
        return RpcFailure::from_raw(raw(error)?, None)
            .map(Ended::Error)
            .ok_or_else(|| ClientError::InvalidResult("tasks/get: a malformed error".into()));
    }
    let status = task.get("status").and_then(Value::as_str).unwrap_or("?");
    Err(ClientError::InvalidResult(format!(
        "tasks/get: the task is {status} without a result or an error ({})",
        progress_line(task)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_are_read_in_each_revision() {
        let flat = json!({"resultType": "task", "taskId": "t", "status": "working"});
        let wrapped = json!({"task": {"taskId": "t", "status": "working"}});
        let new = Dialect::Handshake("2025-11-25".into());
        assert!(task_of(&flat, &Dialect::Modern).is_some());
        assert!(task_of(&wrapped, &new).is_some());
        assert!(task_of(&wrapped, &Dialect::Modern).is_none());
        assert!(task_of(&json!({"content": []}), &new).is_none());
        assert!(task_of(
            &json!({"resultType": "complete", "content": []}),
            &Dialect::Modern
        )
        .is_none());
    }

    #[test]
    fn pauses_are_the_servers_within_bounds() {
        let t = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(
            pause_of(&t(json!({"pollInterval": 2000}))),
            Duration::from_secs(2)
        );
        assert_eq!(
            pause_of(&t(json!({"pollIntervalMs": 5}))),
            Duration::from_millis(100)
        );
        assert_eq!(
            pause_of(&t(json!({"pollIntervalMs": 999_999}))),
            Duration::from_secs(10)
        );
        assert_eq!(pause_of(&t(json!({}))), Duration::from_secs(1));
    }

    #[test]
    fn ended_tasks_inline_their_answer() {
        let t = |v: Value| v.as_object().cloned().unwrap_or_default();
        let done = t(json!({"taskId": "t", "status": "completed", "result": {"content": []}}));
        assert!(matches!(inline(&done), Ok(Ended::Result(_))));
        let failed = t(json!({"taskId": "t", "status": "failed",
                              "error": {"code": -32602, "message": "rejected"}}));
        assert!(matches!(inline(&failed), Ok(Ended::Error(f)) if f.code == -32602));
        let cancelled = t(json!({"taskId": "t", "status": "cancelled"}));
        assert!(inline(&cancelled).is_err());
    }
}
