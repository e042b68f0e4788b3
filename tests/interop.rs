//! Interoperability with the official MCP clients and the conformance suite, against a real
//! gateway: Python `mcp` 2.3.0 (auto = 2026-07-28 via server/discover, and legacy), the
//! TypeScript SDK 1.32.2, `rmcp` 3.11.0 (initialize and Discover), the Python SDK launching
//! `interlock stdio` as a subprocess, and
//! `@modelcontextprotocol/conformance` 0.1.16 / 0.2.0-alpha.12. The scripts live in
//! tests/interop/ (see docs/interop.md); `run_all.sh` installs what is missing (a Python venv,
//! npm packages, Node 22 from npm, and builds the rmcp client once).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::env::demo_env;

#[tokio::test]
async fn official_clients_and_the_conformance_suite_pass() {
    let env = demo_env().await;
    let endpoint = env.gateway.url("/mcp");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop");
    let rmcp_target = concat!(env!("CARGO_MANIFEST_DIR"), "/target/interop-rmcp");
    let cfg_dir = tempfile::tempdir().expect("dir");
    let stdio_config = common::control_config_file(cfg_dir.path(), &env.control_db, "");
    let out = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .arg(format!("{dir}/run_all.sh"))
            .arg(&endpoint)
            .arg(&env.agent_key)
            .env("INTEROP_BUILD_RMCP", "1")
            .env("INTEROP_RMCP_TARGET", rmcp_target)
            .env("INTEROP_INTERLOCK_BIN", env!("CARGO_BIN_EXE_interlock"))
            .env("INTEROP_STDIO_CONFIG", &stdio_config)
            .output()
            .expect("run tests/interop/run_all.sh")
    })
    .await
    .expect("join");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "interop failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("0 failed"), "{stdout}");
    assert!(
        !stdout.contains("skipped"),
        "every client must run, none skipped:\n{stdout}"
    );
}
