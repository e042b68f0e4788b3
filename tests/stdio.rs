//! `interlock stdio` as an MCP host would run it: a child process speaking newline-delimited
//! JSON-RPC, identity from INTERLOCK_API_KEY, logs on stderr only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::env::demo_env;
use serde_json::{json, Value};

struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Server {
    fn start(config: &std::path::Path, key: Option<&str>) -> Self {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_interlock"));
        cmd.arg("--config")
            .arg(config)
            .arg("stdio")
            .env_remove("INTERLOCK_CONFIG")
            .env_remove("INTERLOCK_API_KEY")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(k) = key {
            cmd.env("INTERLOCK_API_KEY", k);
        }
        let mut child = cmd.spawn().expect("spawn stdio");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let stdin = child.stdin.take();
        Server {
            child,
            stdin,
            lines: rx,
        }
    }

    fn send(&mut self, msg: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{msg}").expect("write");
        stdin.flush().expect("flush");
    }

    /// The next message with this id (every line on stdout must be JSON-RPC).
    fn response(&self, id: u64) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).expect("a response in time");
            let msg: Value = serde_json::from_str(&line)
                .unwrap_or_else(|_| panic!("stdout carried a non-JSON line: {line}"));
            assert_eq!(msg["jsonrpc"], "2.0", "{line}");
            if msg["id"] == id {
                return msg;
            }
        }
    }
}

fn config_for(env: &common::env::DemoEnv, dir: &std::path::Path) -> std::path::PathBuf {
    common::control_config_file(dir, &env.control_db, "")
}

#[tokio::test]
async fn handshake_and_modern_requests_over_stdio() {
    let env = demo_env().await;
    let dir = tempfile::tempdir().expect("dir");
    let config = config_for(&env, dir.path());
    let mut s = Server::start(&config, Some(&env.agent_key));

    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    let init = s.response(1);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    s.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
    let list = s.response(2);
    assert!(list["result"]["tools"]
        .as_array()
        .is_some_and(|t| t.len() >= 7));
    s.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                  "params": {"name": "interlock_query", "arguments": {"source_id": "shop", "sql": "SELECT id FROM public.products WHERE id = 5"}}}));
    let q = s.response(3);
    assert_eq!(q["result"]["content"][0]["text"], "[{\"id\":5}]", "{q}");
    // Modern per-request form in the same process.
    s.send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                  "params": {"name": "interlock_query", "arguments": {"source_id": "shop", "sql": "SELECT * FROM hr.salaries"},
                             "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                       "io.modelcontextprotocol/clientCapabilities": {}}}}));
    let refused = s.response(4);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["status"], 403);

    // EOF: the process exits promptly.
    drop(s.stdin.take());
    let started = Instant::now();
    loop {
        if s.child.try_wait().expect("wait").is_some() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "stdio did not exit after EOF"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let audit = env.last_audit().await;
    assert_eq!(audit["adapter"], "stdio");
}

#[tokio::test]
async fn without_a_key_governed_tools_refuse() {
    let env = demo_env().await;
    let dir = tempfile::tempdir().expect("dir");
    let config = config_for(&env, dir.path());
    let mut s = Server::start(&config, None);
    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "interlock_list_sources", "arguments": {}}}));
    let r = s.response(1);
    assert_eq!(r["result"]["isError"], true, "{r}");
    let _ = s.child.kill();
}

/// Issue 33: a host that captures stderr gets plain log lines, never ANSI colour codes
/// (stderr here is a pipe, not a terminal), with and without `NO_COLOR`.
#[tokio::test]
async fn log_lines_on_a_captured_stderr_carry_no_colour_codes() {
    let env = demo_env().await;
    let dir = tempfile::tempdir().expect("dir");
    let config = config_for(&env, dir.path());
    for no_color in [None, Some("1")] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_interlock"));
        cmd.arg("--config")
            .arg(&config)
            .arg("stdio")
            .env_remove("INTERLOCK_CONFIG")
            .env("INTERLOCK_API_KEY", &env.agent_key)
            .env("RUST_LOG", "debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        match no_color {
            Some(v) => cmd.env("NO_COLOR", v),
            None => cmd.env_remove("NO_COLOR"),
        };
        let mut child = cmd.spawn().expect("spawn stdio");
        let mut stdin = child.stdin.take().expect("stdin");
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
        )
        .expect("write");
        drop(stdin);
        let out = tokio::task::spawn_blocking(move || child.wait_with_output())
            .await
            .expect("join")
            .expect("output");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.trim().is_empty(),
            "the test needs log lines to look at"
        );
        assert!(
            !stderr.contains('\u{1b}'),
            "NO_COLOR={no_color:?}: an escape code on a captured stderr: {stderr}"
        );
    }
}

// Multi-threaded: the receiver answers while this test blocks on the child's stdout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_over_stdio_is_traced_under_the_parent_its_meta_names() {
    let env = demo_env().await;
    let receiver = common::receiver::Receiver::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let config = common::control_config_file(
        dir.path(),
        &env.control_db,
        &format!(
            "[telemetry]\notlp_endpoint = \"{}\"\nschedule_delay_ms = 50\n",
            receiver.url
        ),
    );
    let mut s = Server::start(&config, Some(&env.agent_key));
    let parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    s.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "interlock_list_sources", "arguments": {},
                             "_meta": {"traceparent": parent}}}));
    let answer = s.response(1);
    assert!(answer["result"].is_object(), "{answer}");
    drop(s.stdin.take());
    let _ = s.child.wait();
    // Flushed before the process exited: the span is there, under the host's trace.
    let bodies: Vec<Vec<u8>> = receiver.received().into_iter().map(|r| r.body).collect();
    let spans: Vec<_> = bodies
        .iter()
        .flat_map(|b| {
            use prost::Message;
            opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest::decode(
                b.as_slice(),
            )
            .expect("OTLP protobuf")
            .resource_spans
        })
        .flat_map(|rs| rs.scope_spans)
        .flat_map(|ss| ss.spans)
        .collect();
    let root = spans
        .iter()
        .find(|s| s.name == "tools/call interlock_list_sources")
        .unwrap_or_else(|| {
            let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
            panic!(
                "the call's span is not among {names:?} ({} exports)",
                bodies.len()
            )
        });
    assert_eq!(
        hex::encode(&root.trace_id),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(hex::encode(&root.parent_span_id), "00f067aa0ba902b7");
    let steps: Vec<&str> = spans
        .iter()
        .filter(|s| s.parent_span_id == root.span_id)
        .map(|s| s.name.as_str())
        .collect();
    assert!(
        steps.contains(&"identity") && steps.contains(&"audit"),
        "{steps:?}"
    );
    let audit = env.last_audit().await;
    assert_eq!(audit["adapter"], "stdio");
    assert_eq!(
        audit["decision"]["trace_id"],
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
}
