//! The statements a gateway sends to its control database, for the upgrade rules'
//! per-release record (tests/upgrade.rs, scripts/record-control-statements).
//!
//! Every test binary's cluster preloads pg_stat_statements. With
//! `INTERLOCK_RECORD_CONTROL_STATEMENTS=DIR` the gateways of the binary connect to their
//! control databases as a role of their own, [`GATEWAY_ROLE`], so that what the tests
//! themselves send there (as the superuser) is told apart; the server also logs every
//! statement (JSON log), and when the binary exits it writes to `DIR/<pid>.json` what that
//! role sent: the exact texts from the log (with the protocol each came by) and the texts as
//! pg_stat_statements normalizes them (constants as `$n`, which is what
//! `the_statements_this_build_sends_are_in_its_record` compares with).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The role gateways connect as while statements are recorded.
pub const GATEWAY_ROLE: &str = "interlock_gateway";

/// Where this run records control statements, if it does.
pub fn record_dir() -> Option<PathBuf> {
    std::env::var_os("INTERLOCK_RECORD_CONTROL_STATEMENTS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The server settings every test cluster starts with.
pub fn server_settings() -> Vec<(String, String)> {
    let mut settings = vec![
        ("shared_preload_libraries", "pg_stat_statements"),
        ("pg_stat_statements.max", "10000"),
        ("pg_stat_statements.track", "top"),
    ];
    if record_dir().is_some() {
        settings.extend([
            ("logging_collector", "on"),
            ("log_destination", "jsonlog"),
            ("log_directory", "log"),
            ("log_statement", "all"),
        ]);
    }
    settings
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// How a statement reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// A query string, possibly of several statements (`batch_execute`, `simple_query`).
    Simple,
    /// Parse, bind, execute: one statement, parameters as `$n`.
    Extended,
}

/// One statement as the gateway sent it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Sent {
    pub protocol: Protocol,
    pub sql: String,
}

/// What one test binary's gateways sent to their control databases.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Recorded {
    pub statements: Vec<Sent>,
    /// As pg_stat_statements shows them.
    pub normalized: Vec<String>,
}

/// Whether a database is one a gateway under test uses as its control database (the
/// template is migrated once per binary; its migrations are not the gateway's traffic).
fn is_control_db(name: &str) -> bool {
    name.starts_with("control") && name != "control_template"
}

/// The gateway role's statements in the server's JSON log files under `log_dir`.
pub fn from_log(log_dir: &Path) -> Vec<Sent> {
    let mut out = std::collections::BTreeSet::new();
    let Ok(entries) = std::fs::read_dir(log_dir) else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Ok(text) = std::fs::read_to_string(entry.path()) else {
            continue;
        };
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if v["user"] != GATEWAY_ROLE || !v["dbname"].as_str().is_some_and(is_control_db) {
                continue;
            }
            let message = v["message"].as_str().unwrap_or("");
            let sent = if let Some(sql) = message.strip_prefix("statement: ") {
                Sent {
                    protocol: Protocol::Simple,
                    sql: sql.to_string(),
                }
            } else if let Some(rest) = message.strip_prefix("execute ") {
                match rest.split_once(": ") {
                    Some((_, sql)) => Sent {
                        protocol: Protocol::Extended,
                        sql: sql.to_string(),
                    },
                    None => continue,
                }
            } else {
                continue;
            };
            out.insert(sent);
        }
    }
    out.into_iter().collect()
}

/// Runs `f` to completion on a runtime of its own thread (callers may be inside a runtime,
/// or in an `atexit` hook with none).
fn on_own_runtime<F>(f: F) -> F::Output
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(f)
    })
    .join()
    .expect("statement recorder thread")
}

async fn connect(port: u16, password: &str) -> tokio_postgres::Client {
    let mut c = tokio_postgres::Config::new();
    c.host("127.0.0.1")
        .port(port)
        .user(interlock::pgcluster::SUPERUSER)
        .password(password)
        .dbname("postgres");
    let (client, conn) = c.connect(tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// Makes the gateway role (same password as the superuser) and the view, once per cluster.
pub fn prepare(port: u16, password: &str) {
    let password = password.to_string();
    on_own_runtime(async move {
        let client = connect(port, &password).await;
        client
            .batch_execute(&format!(
                "CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
                 CREATE ROLE {GATEWAY_ROLE} LOGIN SUPERUSER PASSWORD '{}'",
                password.replace('\'', "''")
            ))
            .await
            .expect("prepare statement recording");
    });
}

/// The statements the gateway role sent to control databases, as pg_stat_statements
/// normalizes them (the cluster must be running).
pub fn normalized(port: u16, password: &str) -> Vec<String> {
    let password = password.to_string();
    on_own_runtime(async move {
        let client = connect(port, &password).await;
        let rows = client
            .query(
                "SELECT DISTINCT s.query, d.datname FROM pg_stat_statements s \
                 JOIN pg_database d ON d.oid = s.dbid \
                 JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = $1",
                &[&GATEWAY_ROLE],
            )
            .await
            .expect("read pg_stat_statements");
        rows.iter()
            .filter(|r| is_control_db(r.get(1)))
            .map(|r| r.get(0))
            .collect()
    })
}

/// Writes what was recorded to `dir/<pid>.json`.
pub fn write(dir: &Path, recorded: &Recorded) {
    let _ = std::fs::create_dir_all(dir);
    let file = dir.join(format!("{}.json", std::process::id()));
    let body = serde_json::to_vec_pretty(recorded).expect("json");
    std::fs::write(&file, body).expect("write recorded statements");
}
