//! The web console in a real headless Chromium (Debian's, driven by playwright-core): an
//! approver sees a queued write arrive live and approves it; an operator watches the shop
//! source's circuit open when its PostgreSQL is stopped, force-closes it, and watches it
//! recover when the database comes back; then the Activity page draws a day of 50 busy
//! sources. The scripts are in tests/console/ (README there);
//! screenshots are kept in target/test-artifacts/console/.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::env::demo_env_with;
use interlock::pgcluster::{Cluster, ClusterOptions};
use serde_json::{json, Value};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/console");

/// `npm ci` once (playwright-core only; never a browser download).
fn ensure_node_modules() {
    if Path::new(DIR).join("node_modules/playwright-core").is_dir() {
        return;
    }
    let out = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(DIR)
        .output()
        .expect("npm (Node.js) is needed for the console tests");
    assert!(
        out.status.success(),
        "npm ci failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn phase(base: &str, creds: &Path, phase: &str, artifacts: &Path) -> Value {
    let out = Command::new("node")
        .arg(Path::new(DIR).join("console.spec.mjs"))
        .args(["--base", base, "--phase", phase])
        .arg("--creds")
        .arg(creds)
        .arg("--artifacts")
        .arg(artifacts)
        .output()
        .expect("run the console phase");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    assert!(
        out.status.success() && result["ok"] == true,
        "console phase {phase} failed: {}\n{}",
        result,
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .rev()
            .take(30)
            .collect::<Vec<_>>()
            .join("\n")
    );
    result
}

#[tokio::test]
async fn approver_and_operator_work_in_a_real_browser() {
    assert!(
        Path::new("/usr/bin/chromium").exists(),
        "install chromium (Debian package) for the console tests"
    );
    ensure_node_modules();

    // The shop source lives on its own cluster so it can be stopped and restarted.
    let dir = tempfile::Builder::new()
        .prefix("interlock-console-")
        .tempdir()
        .expect("dir");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    let mut source = Cluster::start(&ClusterOptions {
        base_dir: dir.path().join("pg"),
        port: 0,
        fast: true,
        server_settings: Vec::new(),
    })
    .expect("source cluster");
    source
        .connect("postgres")
        .await
        .expect("connect")
        .batch_execute("CREATE DATABASE shop")
        .await
        .expect("db");
    source
        .connect("shop")
        .await
        .expect("shop")
        .batch_execute(interlock::demo::SHOP_SQL)
        .await
        .expect("demo data");
    let (port, pw) = (
        source.port(),
        source.password_file().to_string_lossy().into_owned(),
    );
    let key_file = dir.path().join("checkpoint.key");
    std::fs::write(
        &key_file,
        interlock::ledger::CheckpointKey::generate("interlock.test/console").expect("key"),
    )
    .expect("key file");
    let key_path = key_file.display().to_string();
    let env = demo_env_with(
        move |s| {
            s.audit.checkpoint_key_file = key_path;
            s.audit.checkpoint_interval_secs = 0;
            // The webhook section registers this script's loopback receiver.
            s.webhooks.allow_private = true;
        },
        move |s| {
            s.port = Some(port);
            s.dbname = Some("shop".into());
            s.password_file = Some(pw);
        },
    )
    .await;
    let creds = dir.path().join("creds.json");
    std::fs::write(
        &creds,
        json!({
            "endpoint": env.gateway.url("/mcp"),
            "agent_key": env.agent_key,
            "approver_key": env.approver_key,
            "operator_key": env.operator_key,
            "sources": {"shop": {"dsn": format!("postgres://interlock@127.0.0.1:{port}/shop")}},
        })
        .to_string(),
    )
    .expect("creds");
    let artifacts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts/console");
    std::fs::create_dir_all(&artifacts).expect("artifacts");
    let base = env.gateway.url("");

    let (b, c, a) = (base.clone(), creds.clone(), artifacts.clone());
    let approver = tokio::task::spawn_blocking(move || phase(&b, &c, "approver", &a))
        .await
        .expect("join");
    assert!(
        approver["screenshots"]
            .as_array()
            .is_some_and(|s| !s.is_empty()),
        "{approver}"
    );
    let executed: i64 = common::admin(&env.control_db)
        .await
        .query_one(
            "SELECT count(*) FROM approvals WHERE state = 'executed'",
            &[],
        )
        .await
        .expect("count")
        .get(0);
    assert!(executed >= 1, "the approval made in the browser executed");

    // A report-only rule that matches the agent's reads of customers, and three such reads:
    // the Audit page's report-only table must draw it (the operator-recover phase checks).
    let rule = "[[policies]]\nsource = \"shop\"\nname = \"console\"\n[[policies.rules]]\n\
                name = \"watch-customers\"\nkind = \"deny\"\nmode = \"report\"\n\
                when = \"'public.customers' in statement.tables_read\"\n";
    interlock::control::policy_file::apply(
        &env.pool,
        &interlock::control::policy_file::AccessFile::parse(rule).expect("access file"),
    )
    .await
    .expect("apply the report-only rule");
    env.gateway.state.profiles.invalidate_all();
    for id in 1..=3 {
        let read = json!({"source_id": "shop", "sql": format!("SELECT id FROM public.customers WHERE id = {id}")});
        let a = common::mcp::call(
            &env.gateway.url(""),
            Some(&env.agent_key),
            common::mcp::MODERN,
            "interlock_query",
            read,
        )
        .await;
        assert_eq!(a.status, 200, "{:?}", a.body);
    }
    source.kill().expect("stop the source database");
    let (b, c, a) = (base.clone(), creds.clone(), artifacts.clone());
    tokio::task::spawn_blocking(move || phase(&b, &c, "operator-open", &a))
        .await
        .expect("join");

    source.restart().expect("restart the source database");
    let (b, c, a) = (base.clone(), creds.clone(), artifacts.clone());
    let recover = tokio::task::spawn_blocking(move || phase(&b, &c, "operator-recover", &a))
        .await
        .expect("join");

    // A day of 50 busy sources, one of them failing for its last three hours and every
    // breaker flapping: the Activity page draws it all and still answers the keyboard. The
    // phase's timings (load, refresh, longest main-thread task) are printed for
    // BENCHMARKS.md ("Activity over time"), not asserted.
    common::activity::seed_day(&common::admin(&env.control_db).await, 50, true).await;
    let (b, c, a) = (base.clone(), creds.clone(), artifacts.clone());
    let scale = tokio::task::spawn_blocking(move || phase(&b, &c, "operator-scale", &a))
        .await
        .expect("join");
    println!("console at 24 h x 50 sources: {}", scale["timings_ms"]);

    for shot in [&recover, &scale]
        .into_iter()
        .flat_map(|r| r["screenshots"].as_array().expect("screenshots"))
    {
        let path = shot["path"].as_str().expect("path");
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        assert!(bytes > 8000, "{path} is a real screenshot ({bytes} bytes)");
    }
}
