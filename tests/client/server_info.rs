//! `server-info` over both transports and every way of choosing the protocol version.

use serde_json::json;

use crate::common::{client, client_raw, Via};

fn check(via: Via, version: &str, operation: &str, negotiated: &str) {
    let run = client(via, &["server-info", "--protocol-version", version]);
    assert_eq!(run.code, 0, "{via:?} {version}: {}", run.stderr);
    let v = run.json();
    assert_eq!(v["operation"], json!(operation), "{via:?} {version}");
    assert_eq!(v["protocolVersion"], json!(negotiated));
    assert_eq!(v["serverInfo"]["name"], json!("interlock"));
    assert_eq!(v["capabilities"], json!({"tools": {}}));
    let transport = match via {
        Via::Http => "http",
        Via::Stdio => "stdio",
    };
    assert_eq!(v["transport"], json!(transport));
}

#[test]
fn auto_discovers_modern_over_http() {
    check(Via::Http, "auto", "server/discover", "2026-07-28");
}

#[test]
fn auto_discovers_modern_over_stdio() {
    check(Via::Stdio, "auto", "server/discover", "2026-07-28");
}

#[test]
fn modern_over_http_and_stdio() {
    check(Via::Http, "2026-07-28", "server/discover", "2026-07-28");
    check(Via::Stdio, "2026-07-28", "server/discover", "2026-07-28");
}

#[test]
fn handshake_2025_06_18_over_http_and_stdio() {
    check(Via::Http, "2025-06-18", "initialize", "2025-06-18");
    check(Via::Stdio, "2025-06-18", "initialize", "2025-06-18");
}

#[test]
fn other_handshake_versions() {
    check(Via::Http, "2025-03-26", "initialize", "2025-03-26");
    check(Via::Stdio, "2025-11-25", "initialize", "2025-11-25");
}

#[test]
fn discover_lists_supported_versions() {
    let v = client(Via::Http, &["server-info"]).json();
    assert_eq!(
        v["supportedVersions"],
        json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"])
    );
}

#[test]
fn lossless_server_info_keeps_the_initialize_result() {
    let run = client(
        Via::Stdio,
        &[
            "server-info",
            "--protocol-version",
            "2025-06-18",
            "--output",
            "mcp-json",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v["contractVersion"], json!("1"));
    assert_eq!(v["operation"], json!("initialize"));
    // The plain initialize shape: no resultType, no _meta.
    assert_eq!(v["mcpResult"]["protocolVersion"], json!("2025-06-18"));
    assert!(v["mcpResult"].get("resultType").is_none());
    assert_eq!(v["metadata"]["transport"], json!("stdio"));
}

#[test]
fn pretty_server_info() {
    let run = client(Via::Http, &["server-info", "--output", "pretty"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.starts_with("Server        interlock "),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .contains("Protocol      2026-07-28 (server/discover over http)"));
}

#[test]
fn unreachable_endpoint_is_a_transport_failure() {
    let run = client_raw(
        &[
            "server-info",
            "--endpoint",
            "http://127.0.0.1:9/mcp",
            "--timeout",
            "5",
        ],
        None,
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(run.stderr.contains("transport"), "{}", run.stderr);
}

#[test]
fn missing_stdio_binary_is_a_transport_failure() {
    let run = client_raw(
        &["server-info", "--server-binary", "/nonexistent/interlock"],
        None,
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["server-info", "--transport", "http"][..],
        &[
            "server-info",
            "--transport",
            "stdio",
            "--endpoint",
            "http://127.0.0.1:9/mcp",
        ][..],
        &["server-info", "--protocol-version", "2024-11-05"][..],
        &["server-info", "--timeout", "0"][..],
        &["server-info", "--endpoint", "ftp://127.0.0.1/mcp"][..],
    ] {
        let run = client_raw(args, None);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    }
}

#[test]
fn version_and_help() {
    let v = client_raw(&["--version"], None);
    assert_eq!(v.code, 0);
    assert!(v.stdout.contains(env!("CARGO_PKG_VERSION")));
    let h = client_raw(&["--help"], None);
    assert_eq!(h.code, 0);
    assert!(h.stdout.contains("Exit codes:"));
    assert!(
        !h.stdout.contains("--server-binary"),
        "test-only option is hidden"
    );
}
