//! Tasks at the protocol layer: offered only where declared and switched on, in the shape of
//! each revision; everyone else sees exactly what they saw before tasks existed.

use serde_json::{json, Value};

use super::support::{
    assert_error, error_key, expect_call, expect_reply, handshake, modern, rpc, server,
    tool_catalog, Request,
};
use crate::mcp::tasks::{TaskMethod, TaskSettings, EXTENSION};
use crate::mcp::{dispatch, Dispatch, MODERN};

const TASKS_ERA: Option<&str> = Some("2025-11-25");

/// A modern request whose `_meta` client capabilities are `caps`.
fn modern_with(method: &str, params: Value, caps: Value, name: Option<&str>) -> Request {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
    if let Some(name) = name {
        headers.push(("mcp-name", name));
    }
    Request::json(&headers, &rpc(json!(7), method, params))
}

fn declared() -> Value {
    json!({"extensions": {EXTENSION: {}}})
}

fn off() -> crate::mcp::ServerInfo {
    crate::mcp::ServerInfo {
        tasks: TaskSettings {
            enabled: false,
            ..TaskSettings::default()
        },
        ..server()
    }
}

#[test]
fn initialize_offers_tasks_only_to_a_2025_11_25_client_that_declared_them() {
    let init = |version: &str, caps: Value| {
        let params = json!({"protocolVersion": version, "capabilities": caps,
                            "clientInfo": {"name": "c", "version": "1"}});
        handshake(None, json!(0), "initialize", params)
    };
    let offered = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
    let reply = init("2025-11-25", json!({"tasks": {}})).reply();
    let body = reply.body.expect("body");
    assert_eq!(
        body["result"]["capabilities"],
        json!({"tools": {}, "tasks": offered})
    );
    for (version, caps) in [
        ("2025-11-25", json!({})),
        ("2025-11-25", json!({"tasks": true})),
        ("2025-06-18", json!({"tasks": {}})),
    ] {
        let body = init(version, caps.clone()).reply().body.expect("body");
        assert_eq!(
            body["result"]["capabilities"],
            json!({"tools": {}}),
            "{version} {caps}"
        );
    }
    // Switched off: exactly today's answer, whatever the client declares.
    let request = init("2025-11-25", json!({"tasks": {}}));
    let reply = expect_reply(dispatch(&request.inbound(), &tool_catalog(), &off()));
    assert_eq!(
        reply.body.expect("body")["result"]["capabilities"],
        json!({"tools": {}})
    );
}

#[test]
fn discover_names_the_extension_only_to_a_request_that_declared_it() {
    let discover = |caps: Value| modern_with("server/discover", json!({}), caps, None);
    let body = discover(declared()).reply().body.expect("body");
    assert_eq!(
        body["result"]["capabilities"],
        json!({"tools": {}, "extensions": {EXTENSION: {}}})
    );
    for caps in [
        json!({}),
        json!({"tasks": {}}),
        json!({"extensions": {"other/ext": {}}}),
    ] {
        let body = discover(caps.clone()).reply().body.expect("body");
        assert_eq!(
            body["result"]["capabilities"],
            json!({"tools": {}}),
            "{caps}"
        );
    }
    let request = discover(declared());
    let reply = expect_reply(dispatch(&request.inbound(), &tool_catalog(), &off()));
    assert_eq!(
        reply.body.expect("body")["result"]["capabilities"],
        json!({"tools": {}})
    );
}

#[test]
fn tools_list_marks_the_query_tool_task_capable_in_2025_11_25_only() {
    let support = |version: Option<&str>| {
        let body = handshake(version, json!(1), "tools/list", json!({}))
            .reply()
            .body
            .expect("body");
        body["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t.get("execution").map(|e| (t["name"].clone(), e.clone())))
            .collect::<Vec<_>>()
    };
    let optional = json!({"taskSupport": "optional"});
    assert_eq!(
        support(TASKS_ERA),
        vec![
            (json!("interlock_query"), optional.clone()),
            (json!("agentgate_query"), optional)
        ]
    );
    assert!(support(Some("2025-06-18")).is_empty());
    let body = modern(json!(1), "tools/list", json!({}))
        .reply()
        .body
        .expect("body");
    assert!(body["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .all(|t| t.get("execution").is_none()));
}

#[test]
fn a_tools_call_carries_the_task_its_client_asked_for() {
    let query =
        json!({"name": "interlock_query", "arguments": {"source_id": "pg", "sql": "select 1"}});
    let mut asked = query.clone();
    asked["task"] = json!({"ttl": 60000});
    let call = expect_call(handshake(TASKS_ERA, json!(1), "tools/call", asked.clone()).dispatch());
    assert_eq!(call.task.map(|t| t.ttl_ms), Some(60_000));
    // Before 2025-11-25 there are no tasks: the ask is ignored.
    let call = expect_call(handshake(Some("2025-06-18"), json!(1), "tools/call", asked).dispatch());
    assert_eq!(call.task, None);
    let call = expect_call(handshake(TASKS_ERA, json!(1), "tools/call", query.clone()).dispatch());
    assert_eq!(call.task, None);
    // 2026-07-28: the extension declared in the request is the ask.
    let call = expect_call(
        modern_with(
            "tools/call",
            query.clone(),
            declared(),
            Some("interlock_query"),
        )
        .dispatch(),
    );
    assert_eq!(
        call.task.map(|t| t.ttl_ms),
        Some(TaskSettings::default().default_ttl_ms)
    );
    let call = expect_call(modern(json!(1), "tools/call", query).dispatch());
    assert_eq!(call.task, None);
    // A tool that can never be held refuses a task ask (its taskSupport is forbidden).
    let sources = json!({"name": "interlock_list_sources", "arguments": {}, "task": {}});
    let reply = handshake(TASKS_ERA, json!(3), "tools/call", sources).reply();
    assert_error(&reply, 200, -32601, &json!(3));
    assert_eq!(error_key(&reply), json!("task_not_supported"));
}

/// What a task method dispatches to.
fn task_of(d: Dispatch) -> Result<(TaskMethod, String), (u16, i64)> {
    match d {
        Dispatch::Task(call) => Ok((call.method, call.task_id)),
        Dispatch::Reply(reply) => {
            let body = reply.body.unwrap_or_default();
            Err((
                reply.status,
                body["error"]["code"].as_i64().unwrap_or_default(),
            ))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn task_methods_by_revision_with_their_errors() {
    let id = json!({"taskId": "abc"});
    let legacy = |method: &str, version: Option<&str>| {
        task_of(handshake(version, json!(1), method, id.clone()).dispatch())
    };
    assert_eq!(
        legacy("tasks/get", TASKS_ERA),
        Ok((TaskMethod::Get, "abc".into()))
    );
    assert_eq!(
        legacy("tasks/result", TASKS_ERA),
        Ok((TaskMethod::Result, "abc".into()))
    );
    assert_eq!(
        legacy("tasks/cancel", TASKS_ERA),
        Ok((TaskMethod::Cancel, "abc".into()))
    );
    assert_eq!(
        task_of(handshake(TASKS_ERA, json!(1), "tasks/list", json!({})).dispatch()),
        Ok((TaskMethod::List, String::new()))
    );
    assert_eq!(legacy("tasks/get", Some("2025-06-18")), Err((200, -32601)));
    assert_eq!(
        task_of(handshake(TASKS_ERA, json!(1), "tasks/get", json!({"taskId": 5})).dispatch()),
        Err((200, -32602))
    );
    let now = |method: &str, caps: Value, name: Option<&str>| {
        task_of(modern_with(method, id.clone(), caps, name).dispatch())
    };
    assert_eq!(
        now("tasks/get", declared(), Some("abc")),
        Ok((TaskMethod::Get, "abc".into()))
    );
    assert_eq!(
        now("tasks/cancel", declared(), Some("abc")),
        Ok((TaskMethod::Cancel, "abc".into()))
    );
    assert_eq!(
        now("tasks/update", declared(), Some("abc")),
        Ok((TaskMethod::Update, "abc".into()))
    );
    // Removed in 2026-07-28.
    assert_eq!(
        now("tasks/result", declared(), Some("abc")),
        Err((404, -32601))
    );
    assert_eq!(
        now("tasks/list", declared(), Some("abc")),
        Err((404, -32601))
    );
    // Not declared in this request: -32021, naming what to declare.
    let reply = modern_with("tasks/get", id.clone(), json!({}), Some("abc")).reply();
    assert_error(&reply, 400, -32021, &json!(7));
    assert_eq!(
        reply.body.expect("body")["error"]["data"]["requiredCapabilities"],
        json!({"extensions": {EXTENSION: {}}})
    );
    // Mcp-Name must mirror the task id.
    assert_eq!(now("tasks/get", declared(), None), Err((400, -32020)));
    assert_eq!(
        now("tasks/get", declared(), Some("abd")),
        Err((400, -32020))
    );
    // Switched off: no such methods in either revision.
    let request = modern_with("tasks/get", id.clone(), declared(), Some("abc"));
    let d = dispatch(&request.inbound(), &tool_catalog(), &off());
    assert_eq!(task_of(d), Err((404, -32601)));
    let request = handshake(TASKS_ERA, json!(1), "tasks/get", id);
    let d = dispatch(&request.inbound(), &tool_catalog(), &off());
    assert_eq!(task_of(d), Err((200, -32601)));
}
