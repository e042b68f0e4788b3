//! The three operations over an open session: `server-info`, `tools list`, `tools call`.
//!
//! Each returns a [`Report`]: the stdout text, the exit class and an optional stderr note.
//! A JSON-RPC error answering `tools/call` is a report too (its error object is the call's
//! answer, printed like a result); other failures are [`ClientError`]s.

use serde_json::{json, Map, Value};

use crate::client::args::OutputFormat;
use crate::client::call::{classify, CallOutcome};
use crate::client::error::ClientError;
use crate::client::exit::ExitClass;
use crate::client::negotiate::{self, Negotiated};
use crate::client::output::{self, CallReply, Context};
use crate::client::pager;
use crate::client::session::{Dialect, Session};
use crate::client::task_wait;
use serde_json::value::RawValue;

/// What a command produced.
#[derive(Debug)]
pub struct Report {
    /// Text for stdout.
    pub stdout: String,
    /// The exit class.
    pub class: ExitClass,
    /// A note for stderr (why the class is not success).
    pub note: Option<String>,
}

impl Report {
    fn success(stdout: String) -> Self {
        Report {
            stdout,
            class: ExitClass::Success,
            note: None,
        }
    }
}

/// The context reported with outputs, once the session's dialect is settled.
pub fn context(session: &Session) -> Context {
    Context {
        transport: session.transport_kind().name(),
        protocol_version: session.dialect().version().to_owned(),
    }
}

/// `server-info`: the handshake or discovery result; explicit modern sessions discover now.
pub async fn server_info(
    session: &mut Session,
    negotiated: Option<Negotiated>,
    format: OutputFormat,
) -> Result<Report, ClientError> {
    let negotiated = match negotiated {
        Some(n) => n,
        None => negotiate::discover(session).await?,
    };
    let parsed = output::parsed(&negotiated.result);
    if !parsed.is_object() {
        return Err(ClientError::InvalidResult(format!(
            "{}: the result is not an object",
            negotiated.operation
        )));
    }
    let ctx = context(session);
    Ok(Report::success(output::server_info(
        format,
        &negotiated,
        &ctx,
    )))
}

/// `tools list`: every page.
pub async fn tools_list(
    session: &mut Session,
    format: OutputFormat,
) -> Result<Report, ClientError> {
    let pages = pager::list_tools(session).await?;
    let ctx = context(session);
    Ok(Report::success(output::tools_list(format, &pages, &ctx)))
}

/// How `tools call` asks for a task (`--task`, `--task-ttl`).
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskOptions {
    pub ask: bool,
    pub ttl: Option<std::time::Duration>,
    /// Print the task's progress line on stderr.
    pub progress: bool,
}

/// `tools call NAME`.
pub async fn tools_call(
    session: &mut Session,
    name: &str,
    arguments: Map<String, Value>,
    format: OutputFormat,
    task: TaskOptions,
) -> Result<Report, ClientError> {
    let mut params = Map::new();
    params.insert("name".into(), json!(name));
    params.insert("arguments".into(), Value::Object(arguments));
    if task.ask {
        match session.dialect() {
            Dialect::Modern => session.declare_tasks(),
            Dialect::Handshake(v) if v == "2025-11-25" => {
                let mut asked = Map::new();
                if let Some(ttl) = task.ttl {
                    asked.insert(
                        "ttl".into(),
                        json!(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)),
                    );
                }
                params.insert("task".into(), Value::Object(asked));
            }
            Dialect::Handshake(v) => {
                return Err(ClientError::Usage(format!(
                    "--task needs protocol 2025-11-25 or 2026-07-28; this session speaks {v}"
                )))
            }
        }
    }
    let mut answer = session.request("tools/call", params).await;
    if task.ask {
        answer = follow_task(session, answer, task.progress).await?;
    }
    let ctx = context(session);
    match answer {
        Ok(raw) => {
            let classified = classify(&raw);
            let class = classified.outcome.class();
            let note = match &classified.outcome {
                CallOutcome::Success => None,
                CallOutcome::ToolError => Some(format!(
                    "{name}: the tool reported an error (isError: true){}",
                    tool_error_key(classified.value.as_ref())
                )),
                CallOutcome::InputRequired => Some(format!(
                    "{name}: the server requires input (resultType input_required); \
                     this client does not resolve input requests, the result is returned as is"
                )),
                CallOutcome::Invalid(why) => Some(format!("{name}: invalid result: {why}")),
            };
            Ok(Report {
                stdout: output::tools_call(
                    format,
                    name,
                    class.name(),
                    CallReply::Result(&raw),
                    &ctx,
                ),
                class,
                note,
            })
        }
        Err(ClientError::Rpc(failure)) => {
            let class = ExitClass::Protocol;
            Ok(Report {
                stdout: output::tools_call(
                    format,
                    name,
                    class.name(),
                    CallReply::Error(&failure),
                    &ctx,
                ),
                class,
                note: Some(format!("{name}: {failure}")),
            })
        }
        Err(other) => Err(other),
    }
}

/// The call's answer, or, when it is a task, the answer the task ends with.
async fn follow_task(
    session: &mut Session,
    answer: Result<Box<RawValue>, ClientError>,
    progress: bool,
) -> Result<Result<Box<RawValue>, ClientError>, ClientError> {
    let Ok(raw) = &answer else {
        return Ok(answer);
    };
    let parsed: Value = serde_json::from_str(raw.get()).unwrap_or_default();
    let Some(task) = task_wait::task_of(&parsed, session.dialect()) else {
        return Ok(answer);
    };
    let mut say = |line: &str| {
        if progress {
            eprintln!("interlock client: {line}");
        }
    };
    Ok(match task_wait::follow(session, task, &mut say).await? {
        task_wait::Ended::Result(raw) => Ok(raw),
        task_wait::Ended::Error(failure) => Err(ClientError::Rpc(failure)),
    })
}

/// `: <code>` from InterLock's `structuredContent.code`, when present.
fn tool_error_key(result: Option<&Value>) -> String {
    result
        .and_then(|r| r.pointer("/structuredContent/code"))
        .and_then(Value::as_str)
        .map(|c| format!(": {c}"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_error_key_reads_structured_content() {
        let r = json!({"content": [], "isError": true,
                       "structuredContent": {"status": "forbidden", "code": "policy_denied"}});
        assert_eq!(tool_error_key(Some(&r)), ": policy_denied");
        assert_eq!(tool_error_key(Some(&json!({"content": []}))), "");
        assert_eq!(tool_error_key(None), "");
    }

    #[test]
    fn success_report() {
        let r = Report::success("x\n".into());
        assert_eq!(r.class, ExitClass::Success);
        assert!(r.note.is_none());
    }
}
