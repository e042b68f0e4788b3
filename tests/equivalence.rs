//! Semantic equivalence of the adapters: one fixture set through Streamable HTTP MCP, stdio
//! MCP, and the bundled client over both transports, under the same revision (2025-11-25),
//! identity and configuration. Results, refusals and side effects must match; audit records
//! must match in every field but the adapter name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use common::env::{demo_env, DemoEnv};
use serde_json::{json, Value};

const VERSION: &str = "2025-11-25";

fn fixtures() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "read",
            "interlock_query",
            json!({"source_id": "shop", "sql": "SELECT id, sku, name FROM public.products WHERE id = 3"}),
        ),
        (
            "masked",
            "interlock_query",
            json!({"source_id": "shop", "sql": "SELECT id, email FROM public.customers WHERE id = 8"}),
        ),
        (
            "refusal",
            "interlock_query",
            json!({"source_id": "shop", "sql": "SELECT amount_cents FROM hr.salaries"}),
        ),
        (
            "write",
            "interlock_query",
            json!({"source_id": "shop", "sql": "UPDATE public.orders SET status = 'paid' WHERE id = 30"}),
        ),
        ("sources", "interlock_list_sources", json!({})),
    ]
}

fn config(env: &DemoEnv, dir: &std::path::Path) -> std::path::PathBuf {
    common::control_config_file(dir, &env.control_db, "")
}

/// The parts of a tools/call result that must agree across adapters.
fn essence(result: &Value) -> Value {
    let mut sc = result
        .get("structuredContent")
        .cloned()
        .unwrap_or(Value::Null);
    if let Some(m) = sc.as_object_mut() {
        m.remove("approval_id");
        m.remove("message");
    }
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let text = if result["structuredContent"]["status"] == "queued" {
        "queued".to_string()
    } else {
        text.to_string()
    };
    json!({"isError": result["isError"], "structured": sc, "text": text, "resultType": result["resultType"]})
}

async fn via_http(env: &DemoEnv, name: &str, args: &Value) -> Value {
    let a = common::mcp::call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        VERSION,
        name,
        args.clone(),
    )
    .await;
    a.body["result"].clone()
}

fn via_client(
    env: &DemoEnv,
    config: &std::path::Path,
    http: bool,
    name: &str,
    args: &Value,
) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_interlock"));
    cmd.arg("--config").arg(config).arg("client");
    if http {
        cmd.args([
            "--transport",
            "http",
            "--endpoint",
            &env.gateway.url("/mcp"),
        ]);
    } else {
        cmd.args(["--transport", "stdio"]);
    }
    let out = cmd
        .args([
            "--protocol-version",
            VERSION,
            "--output",
            "json",
            "tools",
            "call",
            name,
            "--arguments",
        ])
        .arg(args.to_string())
        .env("INTERLOCK_API_KEY", &env.agent_key)
        .env_remove("INTERLOCK_CONFIG")
        .output()
        .expect("client");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "client output: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["result"].clone()
}

#[tokio::test]
async fn every_adapter_gives_the_same_answers_side_effects_and_audit() {
    let env = demo_env().await;
    let dir = tempfile::tempdir().expect("dir");
    let cfg = config(&env, dir.path());

    let mut http = Vec::new();
    for (_, name, args) in fixtures() {
        http.push(via_http(&env, name, &args).await);
    }
    let stdio = tokio::task::spawn_blocking({
        let (key, cfg) = (env.agent_key.clone(), cfg.clone());
        move || run_stdio(&key, &cfg)
    })
    .await
    .expect("join");
    let mut client_http = Vec::new();
    let mut client_stdio = Vec::new();
    for (_, name, args) in fixtures() {
        client_http.push(via_client(&env, &cfg, true, name, &args));
        client_stdio.push(via_client(&env, &cfg, false, name, &args));
    }

    for (i, (what, _, _)) in fixtures().iter().enumerate() {
        let want = essence(&http[i]);
        for (adapter, got) in [
            ("stdio", &stdio[i]),
            ("client-http", &client_http[i]),
            ("client-stdio", &client_stdio[i]),
        ] {
            assert_eq!(essence(got), want, "{what} through {adapter}");
        }
    }
    assert_eq!(
        http[2]["isError"], true,
        "the refusal is a refusal everywhere"
    );
    assert!(
        http[1]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains('*'),
        "masked everywhere"
    );

    // Side effects: one queued approval per adapter, nothing executed.
    let control = common::admin(&env.control_db).await;
    let n: i64 = control
        .query_one("SELECT count(*) FROM approvals WHERE statement LIKE '%WHERE id = 30%' AND state = 'pending'", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(n, 4, "each adapter queued its own approval");

    // Audit: same fields except the adapter, and the facts of the call kept for a replay
    // (its adapter and the instant it was made), which must name the record's adapter.
    let rows = control
        .query(
            "SELECT adapter, tool, source_id, action, statement, fingerprint, decision #- '{replay,facts}',
                    outcome, row_count, cache_hit, decision -> 'replay' -> 'facts' ->> 'adapter'
               FROM audit_records WHERE statement LIKE '%FROM public.products WHERE id = 3%' ORDER BY seq",
            &[],
        )
        .await
        .expect("audit");
    assert_eq!(rows.len(), 4);
    let adapters: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(adapters, ["mcp", "stdio", "mcp", "stdio"]);
    let in_facts: Vec<Option<String>> = rows.iter().map(|r| r.get(10)).collect();
    assert_eq!(
        in_facts,
        adapters.iter().cloned().map(Some).collect::<Vec<_>>()
    );
    let essence_of = |r: &tokio_postgres::Row| {
        (
            r.get::<_, String>(1),
            r.get::<_, Option<String>>(2),
            r.get::<_, Option<String>>(3),
            r.get::<_, Option<String>>(4),
            r.get::<_, Option<String>>(5),
            r.get::<_, Value>(6),
            r.get::<_, String>(7),
            r.get::<_, Option<i64>>(8),
        )
    };
    let first = essence_of(&rows[0]);
    for r in &rows[1..] {
        assert_eq!(essence_of(r), first);
    }
}

/// The fixtures through `interlock stdio`, after an initialize handshake.
fn run_stdio(agent_key: &str, config: &std::path::Path) -> Vec<Value> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_interlock"))
        .arg("--config")
        .arg(config)
        .arg("stdio")
        .env("INTERLOCK_API_KEY", agent_key)
        .env_remove("INTERLOCK_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("stdio");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut send = |msg: Value| writeln!(stdin, "{msg}").expect("write");
    send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "eq", "version": "1"}}}));
    let _init = lines.next();
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut out = Vec::new();
    for (i, (_, name, args)) in fixtures().into_iter().enumerate() {
        send(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": name, "arguments": args}}),
        );
        let line = lines.next().expect("answer").expect("line");
        let msg: Value = serde_json::from_str(&line).expect("json");
        out.push(msg["result"].clone());
    }
    drop(stdin);
    let _ = child.wait();
    out
}
