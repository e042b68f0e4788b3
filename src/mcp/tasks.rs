//! MCP Tasks on the wire, in both eras that define them.
//!
//! InterLock binds a task to a human approval: a `tools/call interlock_query` that a client
//! asked to run as a task, and that is held for approval, answers with a task instead of
//! the queued envelope; the task is the approval (same id) and ends when the approval does.
//! Pure functions of their inputs, like the rest of `crate::mcp`; what a task *is* (read off
//! the approval) is decided by the layers above.
//!
//! | | 2025-11-25 (core, experimental) | 2026-07-28 (extension `io.modelcontextprotocol/tasks`) |
//! |---|---|---|
//! | offered | `initialize`'s `capabilities.tasks`, only to a client that declared `capabilities.tasks` | `server/discover`'s `capabilities.extensions`, only to a request that declared the extension |
//! | asked for | `params.task: {ttl?}` on `tools/call`; `interlock_query` has `execution.taskSupport: "optional"` | the extension in the request's `_meta` client capabilities; the server decides |
//! | a held call | `{task: Task}` | `{resultType: "task", …Task}` |
//! | a call answered at once | a task that has already ended (the client asked for one) | the answer itself |
//! | `tasks/get` | the Task | the Task with its `result` or `error` inline |
//! | `tasks/result` | blocks until the task ends, then the call's own answer | -32601 (removed) |
//! | `tasks/list` | the caller's tasks, newest first | -32601 (removed) |
//! | `tasks/cancel` | withdraws a pending approval; the Task, `cancelled` | the same, acknowledged with `{resultType: "complete"}` |
//! | not offered (switched off, or another revision) | `params.task` is ignored; `tasks/*` → -32601 | `tasks/*` → -32601 |
//!
//! Fields: 2025-11-25 names them `ttl` and `pollInterval`, 2026-07-28 `ttlMs` and
//! `pollIntervalMs`. A tool result flagged `isError` ends a 2025-11-25 task `failed` and a
//! 2026-07-28 task `completed` (there `failed` means a JSON-RPC error).

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::mcp::envelope::CLIENT_CAPABILITIES_META_KEY;
use crate::mcp::error::{code, RpcError, Stage};
use crate::mcp::jsonrpc::Message;
use crate::mcp::tool_catalog::{ToolDef, ToolKind};
use crate::mcp::version::{Dialect, LATEST_HANDSHAKE};

/// The tasks extension's identifier (2026-07-28).
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// `_meta` key tying a message to its task (2025-11-25: the `tasks/result` answer).
pub const RELATED_TASK_META_KEY: &str = "io.modelcontextprotocol/related-task";

/// The only handshake revision that defines tasks.
pub const TASKS_HANDSHAKE: &str = LATEST_HANDSHAKE;

/// `[tasks]`: whether clients may ask for tasks, and their timing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSettings {
    /// Offer tasks to clients that declare them. Off: no client is told of tasks,
    /// `params.task` is ignored and `tasks/*` are unknown methods.
    pub enabled: bool,
    /// Milliseconds a client is asked to wait between two `tasks/get`.
    pub poll_interval_ms: u64,
    /// A task's ttl when its client asks for none.
    pub default_ttl_ms: u64,
    /// The longest ttl a client may ask for (longer asks are shortened to it).
    pub max_ttl_ms: u64,
    /// How long a held call's task stays fetchable after the ttl its client asked for (its
    /// approval expires by then): the task's ttl is the two together.
    pub retain_after_ms: u64,
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            enabled: true,
            poll_interval_ms: 2_000,
            default_ttl_ms: 3_600_000,
            max_ttl_ms: 86_400_000,
            retain_after_ms: 3_600_000,
        }
    }
}

/// The shortest ttl a task gets, whatever its client asked (a task must outlive the call
/// that created it long enough to be fetched).
pub const MIN_TTL_MS: u64 = 1_000;

impl TaskSettings {
    /// The ttl a task gets when its client asked for `asked`.
    pub fn ttl_for(&self, asked: Option<u64>) -> u64 {
        asked
            .unwrap_or(self.default_ttl_ms)
            .clamp(MIN_TTL_MS, self.max_ttl_ms.max(MIN_TTL_MS))
    }
}

/// A client's request that a call run as a task, with the ttl it gets (a held call waits
/// for its approvers at most this long).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskAsk {
    pub ttl_ms: u64,
}

/// Whether this request (2026-07-28) declared the tasks extension in its `_meta` client
/// capabilities. Capabilities are per request in that revision: never remembered.
pub fn declares_extension(message: &Message) -> bool {
    message
        .meta()
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES_META_KEY))
        .and_then(|caps| caps.get("extensions"))
        .and_then(|extensions| extensions.get(EXTENSION))
        .is_some_and(Value::is_object)
}

/// Whether tasks are offered to a `tools/call` or `tasks/*` request in `dialect`.
fn offered_in(dialect: Dialect, settings: &TaskSettings) -> bool {
    settings.enabled
        && match dialect {
            Dialect::Modern => true,
            Dialect::Handshake(version) => version == TASKS_HANDSHAKE,
            Dialect::Legacy => false,
        }
}

/// Whether `tool` can run as a task: only a query can be held for approval.
pub fn task_capable(tool: &ToolDef) -> bool {
    tool.kind == ToolKind::Query
}

/// What a `tools/call` asks of tasks. 2025-11-25: `params.task` (ignored where tasks are
/// not offered; -32601 on a tool whose `taskSupport` is forbidden, as the revision says);
/// 2026-07-28: the extension declared in the request (`params.task` is ignored there).
pub fn ask(
    message: &Message,
    dialect: Dialect,
    tool: &ToolDef,
    settings: &TaskSettings,
) -> Result<Option<TaskAsk>, RpcError> {
    if !offered_in(dialect, settings) {
        return Ok(None);
    }
    if dialect.is_modern() {
        let ask = declares_extension(message) && task_capable(tool);
        return Ok(ask.then(|| TaskAsk {
            ttl_ms: settings.ttl_for(None),
        }));
    }
    let Some(task) = message.params.get("task") else {
        return Ok(None);
    };
    let Some(task) = task.as_object() else {
        return Err(RpcError::invalid_params(
            "params.task must be an object ({} or {\"ttl\": milliseconds})",
        ));
    };
    if !task_capable(tool) {
        return Err(RpcError::keyed(
            Stage::Handler,
            404,
            code::METHOD_NOT_FOUND,
            "task_not_supported",
            format!(
                "Method not found: {} cannot run as a task (its execution.taskSupport is \
                 \"forbidden\"); call it without params.task",
                tool.name
            ),
        ));
    }
    let ttl = match task.get("ttl") {
        None | Some(Value::Null) => None,
        Some(ttl) => Some(ttl.as_u64().ok_or_else(|| {
            RpcError::invalid_params("params.task.ttl must be a whole number of milliseconds")
        })?),
    };
    Ok(Some(TaskAsk {
        ttl_ms: settings.ttl_for(ttl),
    }))
}

/// `capabilities.tasks` for `initialize` (2025-11-25), when the client declared
/// `capabilities.tasks` and tasks are on; `None` leaves `initialize` exactly as without.
pub fn handshake_capability(
    message: &Message,
    dialect: Dialect,
    settings: &TaskSettings,
) -> Option<Value> {
    let declared = message
        .params
        .get("capabilities")
        .and_then(|caps| caps.get("tasks"))
        .is_some_and(Value::is_object);
    (declared && dialect == Dialect::Handshake(TASKS_HANDSHAKE) && settings.enabled)
        .then(|| json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}))
}

/// `capabilities.extensions` for `server/discover`, when the request declared the tasks
/// extension and tasks are on.
pub fn discover_extensions(message: &Message, settings: &TaskSettings) -> Option<Value> {
    (settings.enabled && declares_extension(message)).then(|| json!({ EXTENSION: {} }))
}

/// Whether `tools/list` marks task-capable tools (2025-11-25 with tasks on: the only
/// revision whose Tool has `execution.taskSupport`).
pub fn lists_task_support(dialect: Dialect, settings: &TaskSettings) -> bool {
    dialect == Dialect::Handshake(TASKS_HANDSHAKE) && settings.enabled
}

/// The `execution` member of a task-capable tool in `tools/list`.
pub fn tool_execution() -> Value {
    json!({"taskSupport": "optional"})
}

/// A task method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskMethod {
    Get,
    /// 2025-11-25 only.
    Result,
    /// 2025-11-25 only.
    List,
    Cancel,
    /// 2026-07-28 only: input for a task that asked for it (InterLock's never do).
    Update,
}

impl TaskMethod {
    /// The method `name` names in `dialect`, when tasks are offered there.
    pub fn resolve(name: &str, dialect: Dialect, settings: &TaskSettings) -> Option<TaskMethod> {
        if !offered_in(dialect, settings) {
            return None;
        }
        let modern = dialect.is_modern();
        Some(match name {
            "tasks/get" => TaskMethod::Get,
            "tasks/cancel" => TaskMethod::Cancel,
            "tasks/result" if !modern => TaskMethod::Result,
            "tasks/list" if !modern => TaskMethod::List,
            "tasks/update" if modern => TaskMethod::Update,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TaskMethod::Get => "tasks/get",
            TaskMethod::Result => "tasks/result",
            TaskMethod::List => "tasks/list",
            TaskMethod::Cancel => "tasks/cancel",
            TaskMethod::Update => "tasks/update",
        }
    }
}

/// A `tasks/*` request the protocol layer checked: the gateway looks the task up for the
/// authenticated caller.
#[derive(Debug, Clone)]
pub struct TaskCall {
    pub id: Value,
    pub dialect: Dialect,
    pub method: TaskMethod,
    /// `params.taskId` (every method but `tasks/list`).
    pub task_id: String,
    /// `params.cursor` (`tasks/list`).
    pub cursor: Option<String>,
}

/// Checks a `tasks/*` request: 2026-07-28 requires the extension declared in the request
/// (-32021) and `Mcp-Name` equal to `params.taskId` (-32020, checked by the ladder).
pub fn prepare(
    message: &Message,
    dialect: Dialect,
    method: TaskMethod,
) -> Result<TaskCall, RpcError> {
    if dialect.is_modern() && !declares_extension(message) {
        return Err(missing_capability());
    }
    let task_id = match (method, message.params.get("taskId")) {
        (TaskMethod::List, _) => String::new(),
        (_, Some(Value::String(id))) => id.clone(),
        _ => return Err(RpcError::invalid_params("params.taskId must be a string")),
    };
    let cursor = match message.params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.clone()),
        Some(_) => return Err(RpcError::invalid_params("params.cursor must be a string")),
    };
    Ok(TaskCall {
        id: message.reply_id(),
        dialect,
        method,
        task_id,
        cursor,
    })
}

/// -32021 (HTTP 400): a task method from a request that did not declare the extension.
pub fn missing_capability() -> RpcError {
    RpcError::new(
        Stage::Transport,
        400,
        code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: declare the {EXTENSION} extension in this \
             request's _meta client capabilities to use tasks"
        ),
        json!({"code": "missing_capability",
               "requiredCapabilities": {"extensions": {EXTENSION: {}}}}),
    )
}

/// -32602: no task with that id is visible to the caller (another identity's task, an
/// unknown id and one whose ttl has run out are answered alike).
pub fn not_found(task_id: &str) -> RpcError {
    RpcError::keyed(
        Stage::Handler,
        400,
        code::INVALID_PARAMS,
        "task_not_found",
        format!(
            "Failed to retrieve task: Task not found ({}): no task with that id was created \
             by you, or its ttl has ended",
            task_id.chars().take(64).collect::<String>()
        ),
    )
}

/// -32602 (2025-11-25): `tasks/cancel` of a task that has ended, or that can no longer be
/// withdrawn (its approval was given and it runs).
pub fn cannot_cancel(why: &str) -> RpcError {
    RpcError::keyed(
        Stage::Handler,
        400,
        code::INVALID_PARAMS,
        "task_not_cancellable",
        format!("Cannot cancel task: {why}"),
    )
}

/// -32603: the control database could not answer a task method.
pub fn unavailable(why: &str) -> RpcError {
    RpcError::keyed(
        Stage::Handler,
        503,
        code::INTERNAL_ERROR,
        "unavailable",
        format!("Tasks are unavailable: {why}; try again shortly"),
    )
}

/// What a task's call answers (or would have): its JSON-RPC `result` or `error` object.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Result(Value),
    Error(Value),
}

impl Answer {
    /// The answer carried by a JSON-RPC reply body.
    pub fn of_body(body: &Value) -> Option<Answer> {
        if let Some(error) = body.get("error") {
            return Some(Answer::Error(error.clone()));
        }
        body.get("result").cloned().map(Answer::Result)
    }

    fn is_error_result(&self) -> bool {
        matches!(self, Answer::Result(r) if r.get("isError") == Some(&Value::Bool(true)))
    }
}

/// Where a task stands.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskState {
    /// Still waiting (for approvers, or running): `message` says on what, and not to retry.
    Working { message: String },
    /// Ended with `answer`, what the original call would have answered.
    Ended { message: String, answer: Answer },
    /// Withdrawn by its requester; `answer` is what `tasks/result` gives.
    Cancelled { message: String, answer: Answer },
}

/// One task as the caller sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskView {
    pub task_id: String,
    pub state: TaskState,
    pub created_at: DateTime<Utc>,
    pub last_updated_at: DateTime<Utc>,
    pub ttl_ms: u64,
}

impl TaskView {
    /// The status in `dialect` (a tool result flagged `isError` ends a 2025-11-25 task
    /// `failed`, a 2026-07-28 one `completed`).
    pub fn status(&self, dialect: Dialect) -> &'static str {
        match &self.state {
            TaskState::Working { .. } => "working",
            TaskState::Cancelled { .. } => "cancelled",
            TaskState::Ended { answer, .. } => match answer {
                Answer::Error(_) => "failed",
                a if a.is_error_result() && !dialect.is_modern() => "failed",
                _ => "completed",
            },
        }
    }

    pub fn is_terminal(&self) -> bool {
        !matches!(self.state, TaskState::Working { .. })
    }

    fn message(&self) -> &str {
        match &self.state {
            TaskState::Working { message }
            | TaskState::Ended { message, .. }
            | TaskState::Cancelled { message, .. } => message,
        }
    }

    /// The Task object of `dialect`.
    pub fn wire(&self, dialect: Dialect, settings: &TaskSettings) -> Map<String, Value> {
        let modern = dialect.is_modern();
        let mut task = Map::new();
        task.insert("taskId".into(), Value::from(self.task_id.as_str()));
        task.insert("status".into(), Value::from(self.status(dialect)));
        task.insert("statusMessage".into(), Value::from(self.message()));
        task.insert("createdAt".into(), Value::from(timestamp(self.created_at)));
        task.insert(
            "lastUpdatedAt".into(),
            Value::from(timestamp(self.last_updated_at)),
        );
        let (ttl, poll) = if modern {
            ("ttlMs", "pollIntervalMs")
        } else {
            ("ttl", "pollInterval")
        };
        task.insert(ttl.into(), Value::from(self.ttl_ms));
        if !self.is_terminal() {
            task.insert(poll.into(), Value::from(settings.poll_interval_ms));
        }
        task
    }
}

fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The answer to a `tools/call` that became a task.
pub fn created(view: &TaskView, dialect: Dialect, settings: &TaskSettings) -> Value {
    let task = view.wire(dialect, settings);
    if dialect.is_modern() {
        let mut result = task;
        result.insert("resultType".into(), Value::from("task"));
        Value::Object(result)
    } else {
        json!({ "task": task })
    }
}

/// The answer to `tasks/get`: the Task (2026-07-28: with its `result` or `error` inline,
/// as a complete result).
pub fn got(view: &TaskView, dialect: Dialect, settings: &TaskSettings) -> Value {
    let mut task = view.wire(dialect, settings);
    if dialect.is_modern() {
        task.insert("resultType".into(), Value::from("complete"));
        match &view.state {
            TaskState::Ended {
                answer: Answer::Result(r),
                ..
            } => {
                task.insert("result".into(), r.clone());
            }
            TaskState::Ended {
                answer: Answer::Error(e),
                ..
            } => {
                task.insert("error".into(), e.clone());
            }
            _ => {}
        }
    }
    Value::Object(task)
}

/// The answer to `tasks/cancel`: the Task, now `cancelled` (2026-07-28: an acknowledgement).
pub fn cancelled(view: &TaskView, dialect: Dialect, settings: &TaskSettings) -> Value {
    if dialect.is_modern() {
        json!({"resultType": "complete"})
    } else {
        Value::Object(view.wire(dialect, settings))
    }
}

/// The answer to `tasks/list` (2025-11-25): one page of the caller's tasks.
pub fn listed(
    views: &[TaskView],
    next_cursor: Option<String>,
    dialect: Dialect,
    settings: &TaskSettings,
) -> Value {
    let tasks: Vec<Value> = views
        .iter()
        .map(|v| Value::Object(v.wire(dialect, settings)))
        .collect();
    let mut result = json!({ "tasks": tasks });
    if let (Some(next), Some(map)) = (next_cursor, result.as_object_mut()) {
        map.insert("nextCursor".into(), Value::from(next));
    }
    result
}

/// The answer to `tasks/result` (2025-11-25) for a task that has ended: exactly what the
/// call answered (a JSON-RPC error stays one), its result tied to the task by `_meta`.
pub fn payload(view: &TaskView) -> Option<Answer> {
    let answer = match &view.state {
        TaskState::Working { .. } => return None,
        TaskState::Ended { answer, .. } | TaskState::Cancelled { answer, .. } => answer,
    };
    Some(match answer {
        Answer::Result(r) => {
            let mut r = r.clone();
            if let Some(map) = r.as_object_mut() {
                let meta = map.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(
                        RELATED_TASK_META_KEY.into(),
                        json!({"taskId": view.task_id}),
                    );
                }
            }
            Answer::Result(r)
        }
        Answer::Error(e) => Answer::Error(e.clone()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::tool_catalog::ToolCatalog;

    fn message(params: Value) -> Message {
        Message {
            id: Some(json!(1)),
            method: "tools/call".into(),
            params: params.as_object().cloned().unwrap_or_default(),
        }
    }

    fn tool(name: &str) -> std::sync::Arc<ToolDef> {
        let catalog = ToolCatalog::load().expect("catalog");
        catalog.resolve(name).cloned().expect("tool")
    }

    const NEW: Dialect = Dialect::Handshake(TASKS_HANDSHAKE);

    #[test]
    fn asks_follow_each_revision() {
        let on = TaskSettings::default();
        let off = TaskSettings {
            enabled: false,
            ..on
        };
        let query = tool("interlock_query");
        let sources = tool("interlock_list_sources");
        let declared =
            json!({"_meta": {CLIENT_CAPABILITIES_META_KEY: {"extensions": {EXTENSION: {}}}}});
        let ttl = |ms: u64| Ok(Some(ms));
        type Want = Result<Option<u64>, i64>;
        let cases: Vec<(Value, Dialect, &ToolDef, TaskSettings, Want)> = vec![
            (json!({"task": {}}), NEW, &query, on, ttl(3_600_000)),
            (
                json!({"task": {"ttl": 60000}}),
                NEW,
                &query,
                on,
                ttl(60_000),
            ),
            (
                json!({"task": {"ttl": 5}}),
                NEW,
                &query,
                on,
                ttl(MIN_TTL_MS),
            ),
            (
                json!({"task": {"ttl": 999_999_999_999u64}}),
                NEW,
                &query,
                on,
                ttl(86_400_000),
            ),
            (
                json!({"task": {"ttl": "soon"}}),
                NEW,
                &query,
                on,
                Err(code::INVALID_PARAMS),
            ),
            (
                json!({"task": true}),
                NEW,
                &query,
                on,
                Err(code::INVALID_PARAMS),
            ),
            (
                json!({"task": {}}),
                NEW,
                &sources,
                on,
                Err(code::METHOD_NOT_FOUND),
            ),
            (json!({}), NEW, &query, on, Ok(None)),
            (json!({"task": {}}), NEW, &query, off, Ok(None)),
            (
                json!({"task": {}}),
                Dialect::Handshake("2025-06-18"),
                &query,
                on,
                Ok(None),
            ),
            (json!({"task": {}}), Dialect::Modern, &query, on, Ok(None)),
            (
                declared.clone(),
                Dialect::Modern,
                &query,
                on,
                ttl(3_600_000),
            ),
            (declared.clone(), Dialect::Modern, &sources, on, Ok(None)),
            (declared, Dialect::Modern, &query, off, Ok(None)),
        ];
        for (params, dialect, tool, settings, want) in cases {
            let got = ask(&message(params.clone()), dialect, tool, &settings)
                .map(|a| a.map(|t| t.ttl_ms))
                .map_err(|e| e.code);
            assert_eq!(got, want, "{params} in {dialect:?}, {}", tool.name);
        }
    }

    #[test]
    fn capabilities_are_offered_only_to_clients_that_declare_tasks() {
        let on = TaskSettings::default();
        let off = TaskSettings {
            enabled: false,
            ..on
        };
        let init = |caps: Value| {
            message(json!({"protocolVersion": TASKS_HANDSHAKE, "capabilities": caps}))
        };
        assert!(handshake_capability(&init(json!({"tasks": {}})), NEW, &on).is_some());
        assert!(handshake_capability(&init(json!({})), NEW, &on).is_none());
        assert!(handshake_capability(&init(json!({"tasks": {}})), NEW, &off).is_none());
        assert!(handshake_capability(
            &init(json!({"tasks": {}})),
            Dialect::Handshake("2025-06-18"),
            &on
        )
        .is_none());
        let discover =
            |caps: Value| message(json!({"_meta": {CLIENT_CAPABILITIES_META_KEY: caps}}));
        assert_eq!(
            discover_extensions(&discover(json!({"extensions": {EXTENSION: {}}})), &on),
            Some(json!({EXTENSION: {}}))
        );
        for caps in [json!({}), json!({"tasks": {}}), json!({"extensions": {}})] {
            assert!(
                discover_extensions(&discover(caps.clone()), &on).is_none(),
                "{caps}"
            );
        }
        assert!(
            discover_extensions(&discover(json!({"extensions": {EXTENSION: {}}})), &off).is_none()
        );
    }

    fn view(state: TaskState) -> TaskView {
        let at = DateTime::parse_from_rfc3339("2026-12-06T10:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default();
        TaskView {
            task_id: "t-1".into(),
            state,
            created_at: at,
            last_updated_at: at,
            ttl_ms: 60_000,
        }
    }

    #[test]
    fn task_objects_per_revision() {
        let s = TaskSettings::default();
        let working = view(TaskState::Working {
            message: "waiting for 1 of 1 approvals; do not retry".into(),
        });
        assert_eq!(
            created(&working, NEW, &s),
            json!({"task": {"taskId": "t-1", "status": "working",
                "statusMessage": "waiting for 1 of 1 approvals; do not retry",
                "createdAt": "2026-12-06T10:00:00.000Z", "lastUpdatedAt": "2026-12-06T10:00:00.000Z",
                "ttl": 60000, "pollInterval": 2000}})
        );
        assert_eq!(
            created(&working, Dialect::Modern, &s),
            json!({"resultType": "task", "taskId": "t-1", "status": "working",
                "statusMessage": "waiting for 1 of 1 approvals; do not retry",
                "createdAt": "2026-12-06T10:00:00.000Z", "lastUpdatedAt": "2026-12-06T10:00:00.000Z",
                "ttlMs": 60000, "pollIntervalMs": 2000})
        );
        let refused = view(TaskState::Ended {
            message: "rejected".into(),
            answer: Answer::Result(json!({"isError": true, "content": []})),
        });
        assert_eq!(refused.status(NEW), "failed");
        assert_eq!(refused.status(Dialect::Modern), "completed");
        assert_eq!(
            got(&refused, Dialect::Modern, &s)["result"]["isError"],
            json!(true)
        );
        assert!(got(&refused, NEW, &s).get("result").is_none());
        let error = view(TaskState::Ended {
            message: "rejected".into(),
            answer: Answer::Error(json!({"code": -32602, "message": "rejected"})),
        });
        assert_eq!(error.status(Dialect::Modern), "failed");
        assert_eq!(
            got(&error, Dialect::Modern, &s)["error"]["code"],
            json!(-32602)
        );
        let Some(Answer::Result(r)) = payload(&refused) else {
            panic!("a result")
        };
        assert_eq!(r["_meta"][RELATED_TASK_META_KEY], json!({"taskId": "t-1"}));
        assert_eq!(payload(&working), None);
    }

    #[test]
    fn task_methods_exist_where_their_revision_defines_them() {
        let on = TaskSettings::default();
        let off = TaskSettings {
            enabled: false,
            ..on
        };
        let cases = [
            ("tasks/get", NEW, on, Some(TaskMethod::Get)),
            ("tasks/result", NEW, on, Some(TaskMethod::Result)),
            ("tasks/list", NEW, on, Some(TaskMethod::List)),
            ("tasks/cancel", NEW, on, Some(TaskMethod::Cancel)),
            ("tasks/update", NEW, on, None),
            ("tasks/get", Dialect::Modern, on, Some(TaskMethod::Get)),
            (
                "tasks/cancel",
                Dialect::Modern,
                on,
                Some(TaskMethod::Cancel),
            ),
            (
                "tasks/update",
                Dialect::Modern,
                on,
                Some(TaskMethod::Update),
            ),
            ("tasks/result", Dialect::Modern, on, None),
            ("tasks/list", Dialect::Modern, on, None),
            ("tasks/get", Dialect::Handshake("2025-06-18"), on, None),
            ("tasks/get", NEW, off, None),
            ("tasks/get", Dialect::Modern, off, None),
        ];
        for (name, dialect, settings, want) in cases {
            assert_eq!(
                TaskMethod::resolve(name, dialect, &settings),
                want,
                "{name} {dialect:?}"
            );
        }
    }
}
