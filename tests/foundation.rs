//! Foundation: health and readiness, migrations, the operator CLI against a real control
//! database, configuration errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::process::Command;

use common::http::client;
use common::{fresh_control_db, settings_for, TestGateway};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_interlock");

/// A config file pointing the CLI at `control_db`.
fn cli_config(dir: &Path, control_db: &str) -> std::path::PathBuf {
    common::control_config_file(dir, control_db, "")
}

fn cli(config: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN)
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("INTERLOCK_CONFIG")
        .output()
        .expect("run interlock");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn health_and_readiness_answer_json() {
    let db = fresh_control_db().await;
    let gw = TestGateway::start(settings_for(&db));
    let c = client();
    let health = c.get(gw.url("/healthz")).send().await.expect("healthz");
    assert_eq!(health.status(), 200);
    assert!(
        health.headers().contains_key("x-request-id"),
        "every response carries its request id"
    );
    let body: Value = health.json().await.expect("json");
    assert_eq!(body["status"], "ok");

    let ready = c.get(gw.url("/readyz")).send().await.expect("readyz");
    assert_eq!(ready.status(), 200);
    let body: Value = ready.json().await.expect("json");
    assert_eq!(body["status"], "ready");

    // A caller-supplied request id is echoed so it can be correlated.
    let echoed = c
        .get(gw.url("/healthz"))
        .header("x-request-id", "trace-123")
        .send()
        .await
        .expect("healthz");
    assert_eq!(echoed.headers()["x-request-id"], "trace-123");
}

#[tokio::test]
async fn readiness_is_503_with_a_reason_until_migrations_are_applied() {
    let db = common::fresh_database("unmigrated").await;
    let mut settings = settings_for(&db);
    settings.control.migrate_on_start = false;
    let gw = TestGateway::start(settings.clone());
    let res = client()
        .get(gw.url("/readyz"))
        .send()
        .await
        .expect("readyz");
    assert_eq!(res.status(), 503);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["status"], "not_ready");
    assert!(
        body["reason"]
            .as_str()
            .unwrap_or("")
            .contains("interlock migrate"),
        "{body}"
    );

    let (ok, stdout, stderr) = cli(
        &cli_config(tempfile::tempdir().expect("dir").path(), &db),
        &["migrate"],
    );
    assert!(ok, "{stderr}");
    assert!(stdout.contains("applied migrations"), "{stdout}");
    let res = client()
        .get(gw.url("/readyz"))
        .send()
        .await
        .expect("readyz");
    assert_eq!(res.status(), 200);
}

#[tokio::test]
async fn readiness_is_503_when_the_control_database_is_unreachable() {
    let db = fresh_control_db().await;
    let mut settings = settings_for(&db);
    settings.control.migrate_on_start = false;
    settings.control.port = interlock::pgcluster::free_port().expect("port");
    settings.control.connect_timeout_secs = 1;
    let gw = TestGateway::start(settings);
    let res = client()
        .get(gw.url("/readyz"))
        .send()
        .await
        .expect("readyz");
    assert_eq!(res.status(), 503);
    let body: Value = res.json().await.expect("json");
    assert_eq!(body["reason"], "control database unreachable");
}

#[tokio::test]
async fn replicas_migrating_together_apply_each_migration_once() {
    let db = common::fresh_database("race").await;
    let settings = settings_for(&db);
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let control = settings.control.clone();
        tasks.push(tokio::spawn(async move {
            let pool = interlock::control::connect_pool(&control).expect("pool");
            let locks = interlock::control::migrate::LockPolicy::from_settings(&control);
            interlock::control::migrate::migrate(&pool, locks).await
        }));
    }
    let mut applied_total = 0;
    for t in tasks {
        applied_total += t.await.expect("join").expect("migrate").len();
    }
    assert_eq!(applied_total, interlock::control::migrate::MIGRATIONS.len());
    let n: i64 = common::admin(&db)
        .await
        .query_one("SELECT count(*) FROM schema_migrations", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(n as usize, interlock::control::migrate::MIGRATIONS.len());
}

#[tokio::test]
async fn keys_are_shown_once_listed_by_prefix_and_revocable() {
    let db = fresh_control_db().await;
    let dir = tempfile::tempdir().expect("dir");
    let config = cli_config(dir.path(), &db);

    let (ok, key, stderr) = cli(
        &config,
        &[
            "keys",
            "create",
            "billing-agent",
            "--rate",
            "50/s",
            "--burst",
            "100",
        ],
    );
    assert!(ok, "{stderr}");
    let key = key.trim().to_string();
    assert!(key.starts_with("ilk_") && key.len() > 40, "{key}");
    assert!(stderr.contains("shown only this once"), "{stderr}");

    let pool = interlock::control::connect_pool(&settings_for(&db).control).expect("pool");
    let identity = interlock::control::identities::identity_for_key(&pool, &key)
        .await
        .expect("lookup")
        .expect("key resolves");
    assert_eq!(identity.name, "billing-agent");
    let rate = identity.rate.expect("rate stored");
    assert_eq!((rate.per_second, rate.burst), (50.0, 100));

    let (ok, listing, _) = cli(&config, &["keys", "list"]);
    assert!(ok);
    let prefix = &key[..12];
    assert!(
        listing.contains(prefix) && listing.contains("billing-agent"),
        "{listing}"
    );
    assert!(!listing.contains(&key), "the secret must never be listed");

    let (ok, out, stderr) = cli(&config, &["keys", "revoke", prefix]);
    assert!(ok, "{stderr}");
    assert!(out.contains("revoked"), "{out}");
    assert!(
        interlock::control::identities::identity_for_key(&pool, &key)
            .await
            .expect("lookup")
            .is_none()
    );
    let (ok, _, stderr) = cli(&config, &["keys", "revoke", prefix]);
    assert!(!ok);
    assert!(stderr.contains("already revoked"), "{stderr}");
    let (ok, _, stderr) = cli(&config, &["keys", "revoke", "ilk_nope"]);
    assert!(!ok);
    assert!(stderr.contains("keys list"), "{stderr}");
}

#[tokio::test]
async fn sources_are_registered_listed_toggled_and_tested() {
    let db = fresh_control_db().await;
    let target = common::fresh_database("target").await;
    let info = common::cluster();
    let dir = tempfile::tempdir().expect("dir");
    let config = cli_config(dir.path(), &db);
    let port = info.port.to_string();
    let pw = info.password_file.to_string_lossy().into_owned();

    let add = [
        "sources",
        "add",
        "warehouse",
        "--host",
        "127.0.0.1",
        "--port",
        &port,
        "--dbname",
        &target,
        "--user",
        "interlock",
        "--password-file",
        &pw,
        "--description",
        "test warehouse",
    ];
    let (ok, _, stderr) = cli(&config, &add);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = cli(&config, &add);
    assert!(!ok, "registering the same id twice must fail");
    assert!(stderr.contains("already exists"), "{stderr}");

    let (ok, out, _) = cli(&config, &["sources", "list"]);
    assert!(ok);
    assert!(out.contains("warehouse") && out.contains("true"), "{out}");

    let (ok, out, stderr) = cli(&config, &["sources", "test", "warehouse"]);
    assert!(ok, "{stderr}");
    let probe: Value = serde_json::from_str(&out).expect("probe json");
    assert_eq!(probe["ok"], true);
    assert_eq!(probe["user"], "interlock");

    let (ok, _, _) = cli(&config, &["sources", "disable", "warehouse"]);
    assert!(ok);
    let (_, out, _) = cli(&config, &["sources", "list"]);
    assert!(out.contains("false"), "{out}");
    let (ok, _, _) = cli(&config, &["sources", "enable", "warehouse"]);
    assert!(ok);

    // A password given by a reference that does not resolve is reported, not guessed.
    let (ok, _, stderr) = cli(
        &config,
        &[
            "sources",
            "add",
            "broken",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--dbname",
            &target,
            "--user",
            "interlock",
            "--password-env",
            "INTERLOCK_TEST_UNSET_PASSWORD",
        ],
    );
    assert!(ok, "{stderr}");
    let (ok, out, _) = cli(&config, &["sources", "test", "broken"]);
    assert!(!ok);
    assert!(out.contains("INTERLOCK_TEST_UNSET_PASSWORD"), "{out}");
}

#[tokio::test]
async fn access_files_apply_atomically() {
    let db = fresh_control_db().await;
    let dir = tempfile::tempdir().expect("dir");
    let config = cli_config(dir.path(), &db);
    let info = common::cluster();
    let port = info.port.to_string();
    let pw = info.password_file.to_string_lossy().into_owned();
    let (ok, _, stderr) = cli(
        &config,
        &[
            "sources",
            "add",
            "shop",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--dbname",
            "postgres",
            "--user",
            "interlock",
            "--password-file",
            &pw,
        ],
    );
    assert!(ok, "{stderr}");
    let pool = interlock::control::connect_pool(&settings_for(&db).control).expect("pool");
    interlock::demo::register_handbook(&pool)
        .await
        .expect("handbook");
    let demo = dir.path().join("access.toml");
    std::fs::write(&demo, interlock::demo::ACCESS_TOML).expect("write");
    let (ok, out, stderr) = cli(&config, &["policy", "apply", demo.to_str().expect("utf8")]);
    assert!(ok, "{stderr}");
    let applied: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(applied["identities"], 3);
    assert_eq!(applied["grants"], 2);

    // A file with one bad statement changes nothing.
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[[identities]]\nname = \"late-agent\"\nkind = \"agent\"\n\n[[roles]]\nsource = \"shop\"\nname = \"broken\"\nallow = [\"fly public.x\"]\n",
    )
    .expect("write");
    let (ok, _, stderr) = cli(&config, &["policy", "apply", bad.to_str().expect("utf8")]);
    assert!(!ok);
    assert!(stderr.contains("fly"), "{stderr}");
    let n: i64 = common::admin(&db)
        .await
        .query_one(
            "SELECT count(*) FROM identities WHERE name = 'late-agent'",
            &[],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(n, 0, "a failed apply must not leave partial changes");
}

#[test]
fn invalid_configuration_stops_start_up_naming_the_key() {
    let cases: &[(&str, &str, &str)] = &[
        ("INTERLOCK__SERVER__LISTEN", "nonsense", "server.listen"),
        ("INTERLOCK__CONTROL__POOL_SIZE", "0", "control.pool_size"),
        ("INTERLOCK__LOG__FORMAT", "xml", "format"),
    ];
    for (var, value, key) in cases {
        let out = Command::new(BIN)
            .arg("serve")
            .env(var, value)
            .env_remove("INTERLOCK_CONFIG")
            .output()
            .expect("run");
        assert!(!out.status.success(), "{var}={value} must stop start-up");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(key), "{var}={value}: {stderr}");
    }
}

#[test]
fn every_command_has_accurate_help() {
    for args in [
        vec!["--help"],
        vec!["dev", "--help"],
        vec!["keys", "create", "--help"],
        vec!["sources", "add", "--help"],
        vec!["policy", "apply", "--help"],
    ] {
        let out = Command::new(BIN).args(&args).output().expect("run");
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Usage:"), "{args:?}: {text}");
    }
    let out = Command::new(BIN)
        .args(["sources", "add", "--help"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--password-file") && !text.contains("--password <"),
        "secrets by reference only"
    );
}
