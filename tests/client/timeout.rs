//! `--timeout` and `--max-timeout` on a long query: the client exits quickly with the
//! timeout class, and the query does not keep running on the server.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{client, gateway, Via};

const LONG: &str = r#"{"source_id":"shop","sql":"SELECT count(*) FROM (SELECT generate_series(1, 2000000000) AS g) AS s"}"#;

/// Long queries still active on the demo PostgreSQL, or `None` when psql is unavailable.
fn active_long_queries() -> Option<usize> {
    let creds =
        std::fs::read_to_string(gateway().config.parent()?.parent()?.join("creds.json")).ok()?;
    let creds: serde_json::Value = serde_json::from_str(&creds).ok()?;
    let dsn = creds["sources"]["shop"]["dsn"].as_str()?;
    let out = Command::new("psql")
        .args([
            dsn,
            "-Atc",
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' \
             AND query LIKE '%generate_series(1, 2000000000)%' AND pid <> pg_backend_pid()",
        ])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

#[test]
fn timeout_cancels_on_every_transport_and_dialect() {
    for via in [Via::Http, Via::Stdio] {
        for version in ["2026-07-28", "2025-06-18"] {
            let run = client(
                via,
                &[
                    "tools",
                    "call",
                    "interlock_query",
                    "--arguments",
                    LONG,
                    "--timeout",
                    "1s",
                    "--protocol-version",
                    version,
                ],
            );
            assert_eq!(run.code, 7, "{via:?} {version}: {}", run.stderr);
            assert!(run.stderr.contains("timeout"), "{}", run.stderr);
            assert!(run.stdout.is_empty());
            assert!(
                run.elapsed < Duration::from_secs(6),
                "{via:?} {version}: took {:?}",
                run.elapsed
            );
        }
    }
    let max = client(
        Via::Http,
        &[
            "tools",
            "call",
            "interlock_query",
            "--arguments",
            LONG,
            "--timeout",
            "30",
            "--max-timeout",
            "1.5",
        ],
    );
    assert_eq!(max.code, 7, "{}", max.stderr);
    assert!(max.stderr.contains("--max-timeout"), "{}", max.stderr);
    assert!(
        max.elapsed < Duration::from_secs(6),
        "took {:?}",
        max.elapsed
    );

    // The server cancelled the work (checked directly when psql is available).
    let started = Instant::now();
    while let Some(n) = active_long_queries() {
        if n == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{n} long queries still running after the client gave up"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}
