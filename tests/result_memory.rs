//! The byte cap bounds memory, whatever the size of one value: four concurrent
//! reads of a 150 MB value raise the gateway's peak memory (this test process
//! hosts it) by far less than one such value, answer truncated at the byte
//! cap, and leave the source healthy for the next call; errors that quote such a
//! value are bounded the same way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::env::demo_env;
use common::mcp::rows;
use serde_json::json;

/// A field of /proc/self/status, in kB. A memory test that cannot measure memory fails:
/// it must never pass by reading 0 before and after.
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_else(|e| panic!("memory cannot be measured: /proc/self/status: {e}"));
    let kb = status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("memory cannot be measured: no {field} in /proc/self/status"));
    assert!(kb > 0, "memory cannot be measured: {field} reads 0 kB");
    kb
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_huge_values_at_once_stay_within_the_cap() {
    let env = demo_env().await;
    let query = |sql: &str| env.agent_query(json!({"sql": sql}));
    // Warm up: pools open, caches and allocator arenas in use.
    for _ in 0..4 {
        let a = query("SELECT repeat('w', 1000000) AS v").await;
        assert_eq!(a.status, 200);
    }
    let before = status_kb("VmHWM:");
    let huge = "SELECT id, repeat('z', 150000000) AS v FROM public.customers WHERE id = 1";
    let answers = futures_util::future::join_all((0..4).map(|_| query(huge))).await;
    let after = status_kb("VmHWM:");
    for a in &answers {
        assert_eq!(a.status, 200, "{:?}", a.body);
        let result = &a.body["result"];
        assert_eq!(rows(a).len(), 0, "the huge row is not delivered");
        assert_eq!(
            result["_meta"]["interlock/truncated"], "byte_limit",
            "{result}"
        );
    }
    // Errors that quote a huge value (a failed cast of a 60 MB string) are bounded too.
    let echo = "SELECT CAST(repeat('x', 60000000) AS integer) AS v";
    let errors = futures_util::future::join_all((0..4).map(|_| query(echo))).await;
    let after = status_kb("VmHWM:").max(after);
    for a in &errors {
        // The database's refusal, named (never its message, which quotes the value): plain
        // JSON with its status when it came before the stream began, else on the stream.
        let data = &a.body["error"]["data"];
        assert_eq!(data["code"], "tool_execution_failed", "{:?}", a.body);
        let on_stream = a.status == 200 && a.sse;
        assert!(
            on_stream || (!a.sse && serde_json::json!(a.status) == data["status"]),
            "{} {:?}",
            a.status,
            a.body
        );
        assert!(
            a.body.to_string().len() < 10_000,
            "the answer quotes the value"
        );
    }
    let grown_mb = after.saturating_sub(before) / 1024;
    println!("result_memory: peak RSS before {before} kB, after {after} kB (+{grown_mb} MB)");
    assert!(grown_mb < 100, "peak memory grew by {grown_mb} MB");
    // The source is healthy: the same pool answers a normal query at once.
    let a = query("SELECT id FROM public.customers WHERE id = 2").await;
    assert_eq!(a.status, 200);
    assert_eq!(rows(&a)[0]["id"], 2);
    assert_eq!(env.circuit_state("shop").await, "closed");
}
