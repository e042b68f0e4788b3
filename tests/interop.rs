//! Interoperability with the official MCP clients and the conformance suite, against a real
//! gateway: Python `mcp` 2.3.0 (auto = 2026-07-28 via server/discover, and legacy), the
//! TypeScript SDK 1.32.2, `rmcp` 3.11.0 (initialize and Discover), the Python SDK launching
//! `interlock stdio` as a subprocess, and
//! `@modelcontextprotocol/conformance` 0.1.16 / 0.2.0-alpha.12; with the gateway an OAuth
//! protected resource, the Python and TypeScript SDKs also connect with an access token and
//! run their OAuth discovery from a bare 401 (python_oauth.py, node/ts_oauth.mjs); the TypeScript
//! SDK's tasks client follows held writes as MCP Tasks across the two gateways
//! (node/ts_tasks.mjs), and so does the Python SDK 1.30.0's (python_tasks.py). The scripts live in
//! tests/interop/ (see docs/interop.md); `run_all.sh` installs what is missing (a Python venv,
//! npm packages, Node 22 from npm, and builds the rmcp client once).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::Command;

use common::env::demo_env_with;
use common::issuer::{SigningKey, TestIssuer};
use serde_json::json;

#[tokio::test]
async fn official_clients_and_the_conformance_suite_pass() {
    // The gateway is also an OAuth protected resource, its resource the endpoint the clients
    // use (they check the metadata's resource against it), with a test identity provider.
    let issuer = TestIssuer::start();
    let key = SigningKey::es256("interop");
    issuer.publish(&[&key]);
    let port = interlock::pgcluster::free_port().expect("port");
    let endpoint = format!("http://127.0.0.1:{port}/mcp");
    let (resource, issuer_url) = (endpoint.clone(), issuer.base.clone());
    let env = demo_env_with(
        move |s| {
            s.server.listen = format!("127.0.0.1:{port}");
            s.oauth.enabled = true;
            s.oauth.resource = resource;
            s.oauth.issuer = issuer_url;
        },
        |_| {},
    )
    .await;
    assert_eq!(env.gateway.url("/mcp"), endpoint);
    let now = chrono::Utc::now().timestamp();
    let token = key.sign(
        &json!({"iss": issuer.base, "aud": endpoint, "sub": "demo-agent",
        "scope": "interlock:tools", "iat": now, "exp": now + 3600}),
    );
    let issuer_base = issuer.base.clone();
    // A second gateway on the same control database that challenges every request without a
    // credential (oauth.challenge_unauthenticated): the SDKs' sign-in starts from its 401.
    let port = interlock::pgcluster::free_port().expect("port");
    let challenging = format!("http://127.0.0.1:{port}/mcp");
    let mut settings = env.gateway.settings.clone();
    settings.server.listen = format!("127.0.0.1:{port}");
    settings.oauth.resource.clone_from(&challenging);
    settings.oauth.challenge_unauthenticated = true;
    let second = common::TestGateway::start(settings);
    assert_eq!(second.url("/mcp"), challenging);
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop");
    let rmcp_target = concat!(env!("CARGO_MANIFEST_DIR"), "/target/interop-rmcp");
    let cfg_dir = tempfile::tempdir().expect("dir");
    let stdio_config = common::control_config_file(cfg_dir.path(), &env.control_db, "");
    let approver_key = env.approver_key.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("bash")
            .arg(format!("{dir}/run_all.sh"))
            .arg(&endpoint)
            .arg(&env.agent_key)
            .env("INTEROP_BUILD_RMCP", "1")
            .env("INTEROP_RMCP_TARGET", rmcp_target)
            .env("INTEROP_INTERLOCK_BIN", env!("CARGO_BIN_EXE_interlock"))
            .env("INTEROP_STDIO_CONFIG", &stdio_config)
            .env("INTEROP_OAUTH_TOKEN", &token)
            .env("INTEROP_OAUTH_ISSUER", &issuer_base)
            .env("INTEROP_OAUTH_SCOPE", "interlock:tools")
            .env("INTEROP_OAUTH_ENDPOINT", &challenging)
            .env("INTEROP_TASKS_OTHER_ENDPOINT", &challenging)
            .env("INTEROP_APPROVER_KEY", &approver_key)
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
