//! `GET /admin/policy/reported` over a month of a large audit log (issue 54).
//!
//! Fills a durable control database with `--records` audit records (default 3,000,000)
//! spread evenly over 30 days, `--report-percent` of them (default 30) with a report-only
//! outcome, four chains, and then measures, paired in the same run:
//!
//! - the report for a 30-day window (48 buckets) and a 1-hour window, answered from the
//!   minutes the database counted as it stored the records, against the same report read
//!   from the audit records themselves (what answered every window before, and what still
//!   answers for time before counting began);
//! - what counting costs a record being stored: 50,000 records without a report-only
//!   outcome (the trigger's WHEN test only) and 50,000 with one, stored with the trigger
//!   and with triggers switched off for the session, alternated.
//!
//! `cargo bench --bench policy_reported -- --records 3000000`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/setup.rs"]
mod setup;

use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone as _, Utc};
use interlock::config::Settings;
use interlock::control::{self, policy_reports::report_only_series, ControlPool};
use setup::arg;

fn month_start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap()
}

/// Stores `n` records numbered from `from` (of `total`, which spreads them over the month);
/// `percent` of them carry a report-only outcome. Returns the wall time.
async fn fill(
    client: &tokio_postgres::Client,
    from: i64,
    n: i64,
    total: i64,
    percent: i64,
) -> Duration {
    let started = Instant::now();
    client
        .execute(
            "INSERT INTO audit_records (seq, chain, at, request_id, identity, adapter, tool,
                source_id, action, statement, decision, outcome, row_count, duration_us,
                prev_hash, hash)
             SELECT nextval('audit_records_seq'),
                    ('00000000-0000-4000-8000-00000000000' || (i % 4))::uuid,
                    $3::timestamptz + (i * (interval '30 days' / $2::bigint)),
                    md5(i::text), 'demo-agent', 'mcp', 'interlock_query',
                    CASE WHEN i % 10 < 7 THEN 'shop' ELSE 'hr' END, 'read',
                    'SELECT id, name, country FROM public.customers WHERE id = ' || i || ' LIMIT 1001',
                    jsonb_build_object(
                        'verdict', 'allowed',
                        'steps', jsonb_build_array('identity', 'policy', 'sql', 'execution', 'audit'),
                        'replay', jsonb_build_object('effect', jsonb_build_object('verdict', 'read'),
                                                     'facts', repeat('x', 300)),
                        'policy', CASE WHEN i % 100 < $4 THEN jsonb_build_array(
                            jsonb_build_object('policy', 'hours', 'rule', 'no-night-deletes',
                                'mode', 'enforce', 'effect', 'deny delete *', 'result', 'not_matched'),
                            jsonb_build_object('policy', 'hours',
                                'rule', CASE WHEN i % 3 = 0 THEN 'watch-products' ELSE 'big-scans' END,
                                'mode', 'report', 'effect', 'deny read public.products',
                                'result', CASE WHEN i % 50 = 0 THEN 'error' ELSE 'matched' END,
                                'would', CASE WHEN i % 2 = 0 THEN '\"no_change\"'::jsonb
                                              ELSE jsonb_build_object('refuse', jsonb_build_object(
                                                  'code', 'policy_denied', 'rule', 'policy hours')) END))
                        ELSE jsonb_build_array(
                            jsonb_build_object('policy', 'hours', 'rule', 'no-night-deletes',
                                'mode', 'enforce', 'effect', 'deny delete *', 'result', 'not_matched'))
                        END),
                    'ok', 1, 400, '\\x00'::bytea, sha256(('rec' || i)::bytea)
               FROM generate_series($1::bigint, $1::bigint + $5::bigint - 1) AS i",
            &[&from, &total, &month_start(), &percent, &n],
        )
        .await
        .unwrap();
    started.elapsed()
}

async fn set_counted_from(pool: &ControlPool, at: DateTime<Utc>) {
    pool.get()
        .await
        .unwrap()
        .execute(
            "UPDATE policy_report_counting SET counted_from = $1",
            &[&at],
        )
        .await
        .unwrap();
}

/// Median wall time of `runs` reports of `[since, until)`, and the buckets it returned.
async fn report(
    pool: &ControlPool,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    bucket: u32,
    runs: usize,
) -> (Duration, usize, i64) {
    let mut times = Vec::new();
    let mut shape = (0, 0);
    for _ in 0..runs {
        let started = Instant::now();
        let series = report_only_series(pool, since, until, bucket, None)
            .await
            .unwrap();
        times.push(started.elapsed());
        shape = (
            series.iter().map(|s| s.buckets.len()).sum(),
            series
                .iter()
                .map(|s| s.would_change + s.no_change + s.errors)
                .sum(),
        );
    }
    times.sort();
    (times[times.len() / 2], shape.0, shape.1)
}

fn main() {
    let total = arg("--records", 3_000_000) as i64;
    let percent = arg("--report-percent", 30) as i64;
    let (_dir, cluster) = setup::durable_cluster("interlock-reported-bench");
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("rt")
        .block_on(async {
            interlock::demo::prepare_databases(&cluster).await.expect("databases");
            let mut settings =
                Settings::load_with_env(None, Vec::<(String, String)>::new()).expect("settings");
            interlock::demo::control_settings(&mut settings, &cluster);
            let pool = control::connect_pool(&settings.control).expect("pool");
            let locks = control::migrate::LockPolicy::from_settings(&settings.control);
            control::migrate::migrate(&pool, locks).await.expect("migrate");
            let extra = 400_000;
            pool.get()
                .await
                .unwrap()
                .execute(
                    "SELECT audit_extend_partitions($1, 1000000)",
                    &[&(total + extra + 1)],
                )
                .await
                .unwrap();
            set_counted_from(&pool, month_start() - chrono::Duration::days(1)).await;

            println!("filling {total} audit records over 30 days, {percent} % with a report-only outcome");
            let started = Instant::now();
            let chunk = 250_000;
            let client = pool.get().await.unwrap();
            let mut from = 0;
            while from < total {
                fill(&client, from, chunk.min(total - from), total, percent).await;
                from += chunk;
            }
            for table in ["audit_records", "policy_report_minutes", "policy_report_hours"] {
                client
                    .batch_execute(&format!("VACUUM ANALYZE {table}"))
                    .await
                    .unwrap();
            }
            let minutes: i64 = client
                .query_one("SELECT count(*) FROM policy_report_minutes", &[])
                .await
                .unwrap()
                .get(0);
            let size: String = client
                .query_one(
                    "SELECT pg_size_pretty(sum(pg_total_relation_size(inhrelid)))
                       FROM pg_inherits WHERE inhparent = 'audit_records'::regclass",
                    &[],
                )
                .await
                .unwrap()
                .get(0);
            let hours: i64 = client
                .query_one("SELECT count(*) FROM policy_report_hours", &[])
                .await
                .unwrap()
                .get(0);
            println!(
                "filled in {:.0} s: audit records {size}; counted rows (rule × source × chain): {minutes} minutes, {hours} hours",
                started.elapsed().as_secs_f64()
            );

            let end = month_start() + chrono::Duration::days(30);
            let hour = (month_start() + chrono::Duration::days(12), month_start() + chrono::Duration::days(12) + chrono::Duration::hours(1));
            println!("\n| window | answered from | median of 5 | buckets | outcomes counted |");
            println!("|---|---|---|---|---|");
            let mut paired = Vec::new();
            for (name, since, until, bucket) in [
                ("30 days, 48 buckets", month_start(), end, 54_000),
                (
                    "30 days less 37 min, 48 buckets",
                    month_start() + chrono::Duration::minutes(37),
                    end,
                    54_000,
                ),
                ("24 hours, 48 buckets", hour.0, hour.0 + chrono::Duration::days(1), 1_800),
                ("1 hour, 60 buckets", hour.0, hour.1, 60),
            ] {
                set_counted_from(&pool, month_start() - chrono::Duration::days(1)).await;
                let minutes = report(&pool, since, until, bucket, 5).await;
                set_counted_from(&pool, end + chrono::Duration::days(1)).await;
                let records = report(&pool, since, until, bucket, 5).await;
                assert_eq!((minutes.1, minutes.2), (records.1, records.2), "the two answers differ");
                for (from, r) in [("counted hours and minutes", minutes), ("audit records", records)] {
                    println!(
                        "| {name} | {from} | {:.2} ms | {} | {} |",
                        r.0.as_secs_f64() * 1e3,
                        r.1,
                        r.2
                    );
                }
                paired.push((name, records.0.as_secs_f64() / minutes.0.as_secs_f64()));
            }
            for (name, ratio) in paired {
                println!("{name}: the counts {ratio:.0}× faster than the audit records");
            }

            // What counting costs a record being stored (alternated, with and without).
            println!("\n| records stored (50,000 per run) | trigger | µs per record, runs 1 / 2 |");
            println!("|---|---|---|");
            let mut next = total;
            for (kind, share) in [("without a report-only outcome", 0), ("with a report-only outcome", 100)] {
                let mut with = Vec::new();
                let mut without = Vec::new();
                for _ in 0..2 {
                    for on in [true, false] {
                        client
                            .batch_execute(if on {
                                "SET session_replication_role = origin"
                            } else {
                                "SET session_replication_role = replica"
                            })
                            .await
                            .unwrap();
                        let n = 50_000;
                        let took = fill(&client, next, n, total, share).await;
                        next += n;
                        client.batch_execute("RESET session_replication_role").await.unwrap();
                        let us = took.as_secs_f64() * 1e6 / n as f64;
                        if on { with.push(us) } else { without.push(us) }
                    }
                }
                println!("| {kind} | on | {:.2} / {:.2} |", with[0], with[1]);
                println!("| {kind} | off | {:.2} / {:.2} |", without[0], without[1]);
            }
        });
    drop(cluster);
}
