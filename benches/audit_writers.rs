//! Audit records per second on one durable control database with one writer and with two
//! (two gateways' audit writers, each appending to a chain of its own: no lock, no head to
//! re-read), measured in the same run, with the mean time a caller waits for its record to
//! be durable; then what the first checkpoint of everything written costs.
//!
//! Then retention: the bytes a record takes in the control database against in an archive
//! segment, and what archiving costs per record (write, read back and verify, drop).
//!
//! `cargo bench --bench audit_writers -- --seconds 5 --callers 64 [--partition-records N]
//! [--decision-bytes N]` (a larger decision, as a long query's)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/setup.rs"]
mod setup;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use interlock::config::Settings;
use interlock::control::{self, ledger};
use interlock::ledger::CheckpointKey;
use interlock::pgcluster::Cluster;
use interlock_actors::audit::{AuditConfig, AuditHandle, AuditRecord, RecordOutcome};
use interlock_actors::events::EventBus;
use interlock_actors::supervise::{Supervision, SupervisionConfig};
use setup::arg;

/// The decision every record carries: `--decision-bytes N` grows it, as a long analytic
/// query's does (the columns it resolved, each with its rule), to about N bytes of JSON.
static DECISION: std::sync::OnceLock<serde_json::Value> = std::sync::OnceLock::new();

fn decision(bytes: u64) -> serde_json::Value {
    let mut columns = Vec::new();
    let mut d = serde_json::json!({"verdict": "allowed", "columns": []});
    let mut k = 0;
    while (d.to_string().len() as u64) < bytes {
        columns.push(serde_json::json!({
            "table": "public.orders", "column": format!("column_{k}"), "rule": "read public.orders",
        }));
        k += 1;
        d["columns"] = serde_json::Value::Array(columns.clone());
    }
    d
}

fn record(i: u64) -> AuditRecord {
    AuditRecord {
        at: Utc::now(),
        request_id: uuid::Uuid::new_v4().to_string(),
        identity_id: None,
        identity: Some("demo-agent".into()),
        adapter: "mcp".into(),
        dialect: Some("2026-07-28".into()),
        tool: "interlock_query".into(),
        source_id: Some("shop".into()),
        action: Some("read".into()),
        statement: Some(format!(
            "SELECT id, name, country FROM public.customers WHERE id = {i} LIMIT 1001"
        )),
        fingerprint: Some("0123456789abcdef0123456789abcdef".into()),
        decision: DECISION
            .get()
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"verdict": "allowed"})),
        outcome: RecordOutcome::Ok,
        row_count: Some(1),
        duration_us: 400,
        cache_hit: false,
        approval_id: None,
        statement_sha256: None,
    }
}

/// What one cell measured.
struct Cell {
    per_second: f64,
    /// Mean wall-clock time from `append` to durable, in ms.
    wait_ms: f64,
}

/// Records per second appended by `callers` concurrent callers spread over `writers`.
async fn cell(settings: &Settings, writers: usize, callers: u64, secs: u64, span: i64) -> Cell {
    let supervision = Supervision::new(SupervisionConfig::default(), EventBus::default());
    let handles: Vec<AuditHandle> = (0..writers)
        .map(|_| {
            AuditHandle::start(
                control::pool::audit_pool(&settings.control).expect("pool"),
                AuditConfig {
                    partition_records: span,
                    ..AuditConfig::default()
                },
                &supervision,
            )
        })
        .collect();
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let waited_us = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for c in 0..callers {
        let handle = handles[c as usize % writers].clone();
        let done = done.clone();
        let failed = failed.clone();
        let waited_us = waited_us.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = c * 1_000_000;
            while Instant::now() < until {
                let asked = Instant::now();
                match handle.append(record(i)).await {
                    Ok(_) => {
                        done.fetch_add(1, Ordering::Relaxed);
                        waited_us.fetch_add(asked.elapsed().as_micros() as u64, Ordering::Relaxed);
                    }
                    // Not yet started, or refused under load: what a governed call would
                    // answer as "audit unavailable". Counted, not retried at once.
                    Err(_) => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
                i += 1;
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let refused = failed.load(Ordering::Relaxed);
    if refused > 0 {
        println!("  ({writers} writer(s): {refused} appends refused as unavailable)");
    }
    let n = done.load(Ordering::Relaxed);
    Cell {
        per_second: n as f64 / secs as f64,
        wait_ms: waited_us.load(Ordering::Relaxed) as f64 / n.max(1) as f64 / 1000.0,
    }
}

fn main() {
    let secs = arg("--seconds", 5);
    let callers = arg("--callers", 64);
    let span = arg("--partition-records", 20_000) as i64;
    let _ = DECISION.set(decision(arg("--decision-bytes", 0)));
    let (dir, cluster) = setup::durable_cluster("interlock-audit-bench");
    actix_rt::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("rt")
    })
    .block_on(async {
        let metrics = metrics_exporter_prometheus::PrometheusBuilder::new()
            .install_recorder()
            .expect("recorder");
        interlock::demo::prepare_databases(&cluster).await.expect("databases");
        let mut settings =
            Settings::load_with_env(None, Vec::<(String, String)>::new()).expect("settings");
        interlock::demo::control_settings(&mut settings, &cluster);
        let pool = control::connect_pool(&settings.control).expect("pool");
        let locks = control::migrate::LockPolicy::from_settings(&settings.control);
        control::migrate::migrate(&pool, locks).await.expect("migrate");

        println!("audit records per second, durable control database, {callers} callers, {secs} s per cell");
        let one = cell(&settings, 1, callers, secs, span).await;
        steps(&metrics);
        let two = cell(&settings, 2, callers, secs, span).await;
        println!(
            "1 writer : {:>8.0} records/s, {:.2} ms mean wait for durability",
            one.per_second, one.wait_ms
        );
        println!(
            "2 writers: {:>8.0} records/s, {:.2} ms mean wait ({:.2}× one writer, a chain each)",
            two.per_second,
            two.wait_ms,
            two.per_second / one.per_second
        );
        let report = control::audit::verify(&pool).await.expect("verify");
        println!(
            "log after both cells: ok = {}, {} records in {} chains, {} voids, {} pending",
            report.ok, report.records, report.chains, report.voids, report.pending
        );
        assert!(report.ok, "{report:?}");

        let key = CheckpointKey::parse(&CheckpointKey::generate("bench.interlock/audit").expect("key"))
            .expect("key");
        let started = Instant::now();
        let made = ledger::checkpoint(&pool, &key).await.expect("checkpoint").expect("records");
        let took = started.elapsed();
        println!(
            "first checkpoint over {} records: {:.2} s ({:.1} µs per record, wall clock)",
            made.checkpoint.tree_size,
            took.as_secs_f64(),
            took.as_secs_f64() * 1e6 / made.checkpoint.tree_size as f64
        );

        // Retention: on disk in the control database, then in archive segments.
        let on_disk = |pool: control::ControlPool| async move {
            let c = pool.get().await.expect("client");
            let row = c
                .query_one(
                    "SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint,
                            (SELECT count(*) FROM audit_records)
                       FROM pg_inherits WHERE inhparent = 'audit_records'::regclass",
                    &[],
                )
                .await
                .expect("size");
            (row.get::<_, i64>(0), row.get::<_, i64>(1))
        };
        let (bytes_before, live_before) = on_disk(pool.clone()).await;
        let archive = dir.path().join("archive");
        let started = Instant::now();
        let done = interlock::retention::archive(&pool, &key, &archive, None)
            .await
            .expect("archive");
        let took = started.elapsed();
        let (bytes_after, live_after) = on_disk(pool.clone()).await;
        let archived: i64 = done.iter().map(|s| s.last_seq - s.first_seq + 1).sum();
        let file_bytes: u64 = done.iter().map(|s| s.bytes).sum();
        println!(
            "control database: {} records in {} MB ({:.0} bytes per record with indexes)",
            live_before,
            bytes_before / 1_000_000,
            bytes_before as f64 / live_before.max(1) as f64
        );
        if archived > 0 {
            println!(
                "archived {} partitions of {span} records ({archived} records) in {:.2} s ({:.1} µs per record: write, read back and verify, drop)",
                done.len(),
                took.as_secs_f64(),
                took.as_secs_f64() * 1e6 / archived as f64
            );
            println!(
                "segments: {:.0} bytes per record ({:.1}× smaller than in the database); the database kept {} records in {} MB",
                file_bytes as f64 / archived as f64,
                (bytes_before as f64 / live_before.max(1) as f64)
                    / (file_bytes as f64 / archived as f64),
                live_after,
                bytes_after / 1_000_000
            );
        }
        let report = control::audit::verify(&pool).await.expect("verify");
        assert!(report.ok, "{report:?}");
        let checked = interlock::retention::files::check_archive(&archive, key.verifier_key())
            .expect("archive verifies");
        println!(
            "after archiving: live chain ok from record {}, {} segments verify offline",
            report.first_seq,
            checked.segments.len()
        );

        // The floor, last (its rows are not chained): what one durable single-row INSERT of
        // a record of the same size costs, pgbench with one client, prepared, into the
        // current partition and through the partitioned parent.
        let c = pool.get().await.expect("client");
        // Partitions well ahead, so neither floor runs past the last one; the partition
        // that holds the next seq is the writer's.
        c.execute(
            "SELECT audit_extend_partitions((SELECT last_value FROM audit_records_seq) + 200000, $1)",
            &[&span],
        )
        .await
        .expect("partitions ahead");
        let partition: String = c
            .query_one(
                "SELECT name FROM audit_partitions, (SELECT last_value + 1 AS next FROM audit_records_seq) s
                  WHERE archived_at IS NULL AND lower <= s.next AND upper > s.next",
                &[],
            )
            .await
            .expect("partition")
            .get(0);
        setup::name_floor_chain(&c).await;
        for table in [partition.as_str(), "audit_records"] {
            let ms = floor(&cluster, dir.path(), table, secs);
            println!("floor, pgbench 1 client, one INSERT into {table}: {ms:.3} ms mean latency");
        }
    });
}

/// Where a record's wait went in the cell just run (one writer): the mean of each step of
/// `interlock_audit_step_seconds`, and of the caller's whole wait.
fn steps(metrics: &metrics_exporter_prometheus::PrometheusHandle) {
    let text = metrics.render();
    // (sum, count) of a series, of one step's when `label` is given.
    let series = |name: &str, label: Option<&str>| {
        let pick = |suffix: &str| {
            text.lines()
                .filter(|l| l.starts_with(&format!("{name}_{suffix}")))
                .filter(|l| label.is_none_or(|s| l.contains(&format!("step=\"{s}\""))))
                .find_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
                .unwrap_or(0.0)
        };
        (pick("sum"), pick("count").max(1.0))
    };
    let (waited, records) = series("interlock_audit_wait_seconds", None);
    let wait = waited / records * 1e6;
    // A record waits for its own steps and for the whole of its batch's: per-record steps
    // are averaged over their records, batch steps over the batches (one insert each).
    let (_, batches) = series("interlock_audit_step_seconds", Some("insert"));
    let mut accounted = 0.0;
    print!("where one writer's wait goes (mean µs):");
    for step in ["mailbox", "queued", "checkout", "seqs", "encode", "insert"] {
        let (sum, count) = series("interlock_audit_step_seconds", Some(step));
        let per = if matches!(step, "mailbox" | "queued") {
            count
        } else {
            batches
        };
        let m = sum / per * 1e6;
        accounted += m;
        print!(" {step} {m:.0},");
    }
    println!(
        " the reply's way back and the rest {:.0}; whole wait {wait:.0}",
        wait - accounted
    );
}

/// pgbench's mean latency (ms) for one prepared single-row INSERT of a record like the
/// bench's into `table`, each with a new seq, for `secs` seconds.
fn floor(cluster: &Cluster, dir: &std::path::Path, table: &str, secs: u64) -> f64 {
    let script = dir.join(format!("floor-{table}.sql"));
    std::fs::write(&script, setup::audit_insert_script(table)).expect("script");
    let out = std::process::Command::new("pgbench")
        .args([
            "-n",
            "-c",
            "1",
            "-M",
            "prepared",
            "-T",
            &secs.to_string(),
            "-f",
        ])
        .arg(&script)
        .arg(cluster.admin_dsn(interlock::demo::CONTROL_DB))
        .output()
        .expect("pgbench (postgresql-client)");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("latency average = "))
        .and_then(|v| v.trim_end_matches(" ms").trim().parse().ok())
        .unwrap_or_else(|| panic!("pgbench: {text}{}", String::from_utf8_lossy(&out.stderr)))
}
