//! The declared order of governance steps (`src/stages.rs`; each tool's in
//! `src/call/steps.rs`), seen from the audit log of real calls: a call refused at step k
//! names k (`refused_at`), and the steps it entered (`steps`) stop at k — nothing after k
//! ran — before the audit itself. One case per
//! step that can refuse, over real HTTP and PostgreSQL; an allowed read passes every step
//! in order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::env::{demo_env, DemoEnv};
use common::mcp::{call, MODERN};
use interlock::call::steps::declared;
use interlock::mcp::ToolKind;
use interlock::stages::{GovernanceStep, ORDER};
use serde_json::{json, Value};

/// A step's place in the declared order (`interlock::stages::ORDER`), by name.
fn position(step: &str) -> usize {
    ORDER
        .iter()
        .position(|s| s.name() == step)
        .unwrap_or_else(|| panic!("unknown step {step}"))
}

/// The newest audit record of `tool` with decision code `code` (or an allowed one when
/// `code` is `None`), waiting for it to land.
async fn audited(env: &DemoEnv, tool: &str, code: Option<&str>) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let record = env.last_audit().await;
        let matches = record["tool"] == tool
            && match code {
                Some(code) => record["decision"]["code"] == code,
                None => record["decision"]["verdict"] == "allow",
            };
        if matches {
            return record;
        }
        assert!(
            Instant::now() < deadline,
            "no audit record of {tool} {code:?}; last: {record}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The steps a record says the call entered, checked to be in the declared order and to
/// end with the audit.
fn steps_of(record: &Value) -> Vec<String> {
    let steps: Vec<String> = record["decision"]["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps in {record}"))
        .iter()
        .map(|s| s.as_str().expect("step name").to_string())
        .collect();
    for pair in steps.windows(2) {
        assert!(
            position(&pair[0]) < position(&pair[1]),
            "steps out of order: {steps:?}"
        );
    }
    assert_eq!(steps.first().map(String::as_str), Some("identity"));
    assert_eq!(steps.last().map(String::as_str), Some("audit"));
    steps
}

struct Case {
    what: &'static str,
    tool: &'static str,
    key: Key,
    arguments: Value,
    code: &'static str,
    refused_at: &'static str,
}

#[derive(Clone, Copy)]
enum Key {
    None,
    Agent,
    Ungranted,
    Limited,
}

#[tokio::test]
async fn a_refusal_names_its_step_and_no_later_step_ran() {
    let env = demo_env().await;
    let base = env.gateway.url("");
    let ungranted = env.new_agent("steps-ungranted", None).await;
    let limited = env.new_agent("steps-limited", Some("1/m")).await;
    env.grant_analyst("steps-limited").await;

    let cases = [
        Case {
            what: "no key",
            tool: "interlock_query",
            key: Key::None,
            arguments: json!({"source_id": "shop", "sql": "SELECT 1"}),
            code: "unauthenticated",
            refused_at: "identity",
        },
        Case {
            what: "discovery arguments the schema cannot judge",
            tool: "interlock_discover",
            key: Key::Agent,
            arguments: json!({"source_id": "shop", "time_range": {"from": "2025-02-01T00:00:00Z", "to": "2025-01-01T00:00:00Z"}}),
            code: "invalid_arguments",
            refused_at: "arguments",
        },
        Case {
            what: "unknown source",
            tool: "interlock_query",
            key: Key::Agent,
            arguments: json!({"source_id": "nope", "sql": "SELECT 1"}),
            code: "unknown_source",
            refused_at: "source",
        },
        Case {
            what: "no role on the source",
            tool: "interlock_query",
            key: Key::Ungranted,
            arguments: json!({"source_id": "shop", "sql": "SELECT id FROM public.customers"}),
            code: "no_grant",
            refused_at: "source_role",
        },
        Case {
            what: "a statement the decision refuses",
            tool: "interlock_query",
            key: Key::Agent,
            arguments: json!({"source_id": "shop", "sql": "DROP TABLE public.customers"}),
            code: "sql_forbidden_statement",
            refused_at: "policy",
        },
        Case {
            what: "a table the roles do not allow",
            tool: "interlock_query",
            key: Key::Agent,
            arguments: json!({"source_id": "shop", "sql": "SELECT * FROM hr.salaries"}),
            code: "access_denied",
            refused_at: "policy",
        },
        Case {
            what: "a value PostgreSQL cannot read as its parameter's type",
            tool: "interlock_query",
            key: Key::Agent,
            arguments: json!({"source_id": "shop", "sql": "SELECT id FROM public.customers WHERE id = $1", "params": ["not a number"]}),
            code: "invalid_parameter",
            refused_at: "execution",
        },
        Case {
            what: "someone else's (or no) approval",
            tool: "interlock_approval_status",
            key: Key::Agent,
            arguments: json!({"approval_id": "6f1c2a54-2d7b-4b8e-9a43-0c6a1f3e7b21"}),
            code: "not_found",
            refused_at: "execution",
        },
    ];
    for case in &cases {
        refused_at(&env, &base, case, &ungranted, &limited).await;
    }
    // Every tool starts with identity: without a key, nothing after it runs.
    let tools = [
        ("interlock_list_sources", json!({})),
        ("interlock_describe_access", json!({})),
        ("interlock_describe_source", json!({"source_id": "shop"})),
        ("interlock_discover", json!({"source_id": "shop"})),
        ("interlock_related_documents", json!({"asset_id": "a1"})),
        (
            "interlock_approval_status",
            json!({"approval_id": "6f1c2a54-2d7b-4b8e-9a43-0c6a1f3e7b21"}),
        ),
    ];
    for (tool, arguments) in tools {
        let case = Case {
            what: "no key",
            tool,
            key: Key::None,
            arguments,
            code: "unauthenticated",
            refused_at: "identity",
        };
        refused_at(&env, &base, &case, &ungranted, &limited).await;
    }

    // Rate limit: the limited agent's second call inside its minute.
    let limited_case = Case {
        what: "a spent rate budget",
        tool: "interlock_query",
        key: Key::Limited,
        arguments: json!({"source_id": "shop", "sql": "SELECT id FROM public.customers WHERE id = 1"}),
        code: "rate_limited",
        refused_at: "rate_limit",
    };
    let first = call(
        &base,
        Some(&limited),
        MODERN,
        limited_case.tool,
        limited_case.arguments.clone(),
    )
    .await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    refused_at(&env, &base, &limited_case, &ungranted, &limited).await;

    // Breaker: a circuit forced open refuses before the cache and the source.
    force_circuit(&env, "open").await;
    let open_case = Case {
        what: "a circuit forced open",
        tool: "interlock_query",
        key: Key::Agent,
        arguments: json!({"source_id": "shop", "sql": "SELECT id FROM public.customers WHERE id = 2"}),
        code: "circuit_open",
        refused_at: "breaker",
    };
    refused_at(&env, &base, &open_case, &ungranted, &limited).await;
    force_circuit(&env, "close").await;
}

/// An operator forces the `shop` circuit open or closed.
async fn force_circuit(env: &DemoEnv, action: &str) {
    let res = common::http::client()
        .post(env.gateway.url("/admin/sources/shop/circuit"))
        .bearer_auth(&env.operator_key)
        .json(&json!({"action": action, "reason": "governance steps test"}))
        .send()
        .await
        .expect("force the circuit");
    assert_eq!(res.status(), 200, "force {action}");
}

async fn refused_at(env: &DemoEnv, base: &str, case: &Case, ungranted: &str, limited: &str) {
    let key = match case.key {
        Key::None => None,
        Key::Agent => Some(env.agent_key.as_str()),
        Key::Ungranted => Some(ungranted),
        Key::Limited => Some(limited),
    };
    let answer = call(base, key, MODERN, case.tool, case.arguments.clone()).await;
    // Refusals after the stream is committed (execution) arrive in the body at HTTP 200.
    let refused = answer.status != 200
        || answer.body.get("error").is_some()
        || answer.body["result"]["isError"] == true;
    assert!(refused, "{}: {:?}", case.what, answer.body);
    let record = audited(env, case.tool, Some(case.code)).await;
    assert_eq!(
        record["decision"]["refused_at"], case.refused_at,
        "{}: {record}",
        case.what
    );
    let steps = steps_of(&record);
    let at = position(case.refused_at);
    let after: Vec<&String> = steps
        .iter()
        .filter(|s| s.as_str() != "audit" && position(s) > at)
        .collect();
    assert!(
        after.is_empty(),
        "{}: steps after {} ran: {after:?}",
        case.what,
        case.refused_at
    );
    assert_eq!(
        steps.iter().rev().nth(1).map(String::as_str),
        Some(case.refused_at),
        "{}: the last step before the audit is the refusing one: {steps:?}",
        case.what
    );
}

#[tokio::test]
async fn an_allowed_read_passes_every_step_of_its_tool_in_order() {
    let env = demo_env().await;
    let answer = env
        .agent_query(
            json!({"sql": "SELECT id, email FROM public.customers WHERE id = $1", "params": [7]}),
        )
        .await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    let record = audited(&env, "interlock_query", None).await;
    let steps = steps_of(&record);
    // Every step interlock_query declares, in its order; the cache only when the source
    // caches results, cost admission only where it applies (not here: no cost rule, no
    // budget; tests/cost_admission.rs has the reads it applies to).
    let expected: Vec<&str> = declared(ToolKind::Query)
        .iter()
        .filter(|s| **s != GovernanceStep::Cache || steps.iter().any(|t| t == "cache"))
        .filter(|s| **s != GovernanceStep::Cost)
        .map(|s| s.name())
        .collect();
    assert_eq!(steps, expected);
}
