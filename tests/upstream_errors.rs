//! Errors classified by cause: the caller's mistakes (a parameter value of the
//! wrong type, a failing cast, division by zero, a parameter PostgreSQL cannot
//! read) never count towards the source's circuit, however often they repeat;
//! parameter mismatches are 400 refusals that name the parameter and its type.
//! (A source that really fails still opens the circuit: `tests/resilience.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::env::demo_env;
use common::mcp::rows;
use serde_json::{json, Value};

#[tokio::test]
async fn caller_mistakes_never_open_the_circuit() {
    let env = demo_env().await;
    // (sql, params, HTTP status, machine key, words the reason must contain)
    let cases: Vec<(&str, Value, u16, &str, &str)> = vec![
        (
            "SELECT id FROM public.customers WHERE id = $1",
            json!(["abc"]),
            400,
            "invalid_parameter",
            "$1 must be of type int8",
        ),
        (
            "SELECT $1::numeric AS n",
            json!(["ten"]),
            400,
            "invalid_parameter",
            "numeric",
        ),
        (
            "SELECT $1::boolean AS b",
            json!(["maybe"]),
            400,
            "invalid_parameter",
            "bool",
        ),
        (
            "SELECT id FROM public.products WHERE price_cents > $1",
            json!([1.5]),
            400,
            "invalid_parameter",
            "int8",
        ),
        (
            "SELECT $1::int AS i",
            json!([3_000_000_000_i64]),
            400,
            "invalid_parameter",
            "int4",
        ),
        (
            "SELECT id FROM public.customers WHERE created_at > $1",
            json!(["not a date"]),
            400,
            "invalid_parameter",
            "timestamptz",
        ),
        (
            "SELECT 1 AS x",
            json!([1]),
            400,
            "sql_parameter_mismatch",
            "$1",
        ),
        // Errors of the statement at run time: opaque to the agent, never the breaker's.
        (
            "SELECT 1 / 0 AS x",
            json!([]),
            500,
            "tool_execution_failed",
            "tool execution failed",
        ),
        (
            "SELECT 'x'::int AS x",
            json!([]),
            500,
            "tool_execution_failed",
            "tool execution failed",
        ),
        (
            "SELECT (id / 0) AS x FROM public.customers",
            json!([]),
            500,
            "tool_execution_failed",
            "tool execution failed",
        ),
    ];
    for (sql, params, status, key, words) in &cases {
        for attempt in 0..30 {
            let a = env.agent_query(json!({"sql": sql, "params": params})).await;
            // Refusals decided before execution answer with their status; those decided
            // once the result stream is open carry it in the error's data.
            let carried = a.body["error"]["data"]["status"].as_u64();
            assert!(
                a.status == *status || (a.sse && carried == Some(u64::from(*status))),
                "{sql} #{attempt}: {} {:?}",
                a.status,
                a.body
            );
            assert_eq!(
                a.body["error"]["data"]["code"], *key,
                "{sql} #{attempt}: {:?}",
                a.body
            );
            let reason = a.body["error"]["data"]["reason"]
                .as_str()
                .unwrap_or_default();
            assert!(reason.contains(words), "{sql} #{attempt}: {reason}");
        }
        // Not one of them counted as a failure of the source: a share of failures under
        // the opening rate would keep the circuit closed and prove nothing.
        let circuit = env.circuit("shop").await;
        assert_eq!(circuit["window_failures"], 0, "{sql}: {circuit}");
        assert_eq!(circuit["state"], "closed", "{sql}: {circuit}");
    }
    assert_eq!(env.circuit_state("shop").await, "closed");
    // And the source still answers everyone.
    let a = env
        .agent_query(json!({"sql": "SELECT id FROM public.customers WHERE id = $1", "params": [7]}))
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(rows(&a)[0]["id"], 7);
}
