//! `GET /admin/policy/reported`'s counts, differentially: report-only outcomes of random
//! audit records (every mode, result and would-be effect a decision records, duplicated
//! rules, malformed policy arrays, voids, records without a source, many chains, a
//! rolled-back insert, a writer's session in a time zone at a half hour), spread over a
//! month, are counted three ways that must agree bucket by bucket: by the control
//! database's trigger as each record is stored (its hours and minutes),
//! by reading the audit records themselves (what answers for the time before counting
//! began), and by a model in Rust built on `RuleOutcome::label`, the label the gateway's
//! metrics and `policy simulate` give the same outcome.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, DurationRound as _, TimeZone as _, Utc};
use interlock::control::policy_reports::{report_only_series, RuleSeries};
use interlock::control::{partitions, ControlPool};
use interlock::governance::policy::{RuleMode, RuleOutcome};
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::{json, Value};
use uuid::Uuid;

const RECORDS: usize = 1_500;
const POLICIES: [&str; 2] = ["hours", "cost"];
const RULES: [&str; 3] = ["watch-products", "night-deletes", "big-scans"];
const SOURCES: [Option<&str>; 3] = [Some("shop"), Some("hr"), None];

/// A report's window: since, until, bucket seconds, source.
type Window = (DateTime<Utc>, DateTime<Utc>, u32, Option<&'static str>);

/// One generated record.
struct Made {
    at: DateTime<Utc>,
    source: Option<&'static str>,
    void: bool,
    decision: Value,
}

fn start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap()
}

/// A policy outcome as the gateway records it, or something a decision should never hold
/// but the counting must survive.
fn outcome(rng: &mut StdRng) -> Value {
    if rng.gen_ratio(1, 20) {
        return [json!("stray"), json!({"rule": "no-mode"}), json!(null)][rng.gen_range(0..3)]
            .clone();
    }
    let result = ["matched", "not_matched", "error"][rng.gen_range(0..3)];
    let mode = if rng.gen_ratio(3, 4) {
        RuleMode::Report
    } else {
        RuleMode::Enforce
    };
    let would = match (mode, result) {
        (RuleMode::Report, "matched" | "error") => match rng.gen_range(0..3) {
            0 => Some(json!("no_change")),
            1 => Some(json!({"refuse": {"code": "policy_denied"}})),
            _ => Some(json!({"approvals_required": 2})),
        },
        _ => None,
    };
    serde_json::to_value(RuleOutcome {
        policy: POLICIES[rng.gen_range(0..POLICIES.len())].into(),
        rule: RULES[rng.gen_range(0..RULES.len())].into(),
        mode,
        effect: "deny read public.products".into(),
        result,
        error: (result == "error").then(|| "no such fact".into()),
        would,
    })
    .unwrap()
}

fn decision(rng: &mut StdRng) -> Value {
    match rng.gen_range(0..10) {
        0 => json!({"verdict": "allowed"}),
        1 => json!({"verdict": "allowed", "policy": {"not": "an array"}}),
        _ => {
            let n = rng.gen_range(0..5);
            json!({"verdict": "allowed", "policy": (0..n).map(|_| outcome(rng)).collect::<Vec<_>>()})
        }
    }
}

fn generate(seed: u64) -> Vec<Made> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..RECORDS)
        .map(|_| {
            // Clustered in a few busy minutes as well as spread over the month.
            let minute = if rng.gen_ratio(1, 3) {
                rng.gen_range(0..4)
            } else {
                rng.gen_range(0..30 * 24 * 60)
            };
            Made {
                at: start()
                    + Duration::minutes(minute)
                    + Duration::milliseconds(rng.gen_range(0..60_000)),
                source: SOURCES[rng.gen_range(0..SOURCES.len())],
                void: rng.gen_ratio(1, 25),
                decision: decision(&mut rng),
            }
        })
        .collect()
}

/// Stores `made` as a writer would, in batches of several rows per statement, each batch
/// on a chain of its own, from a session whose time zone is not a whole number of hours
/// from UTC (the counts are UTC's minutes and hours whatever the writer's session says).
async fn store(pool: &ControlPool, made: &[Made]) {
    let client = pool.get().await.unwrap();
    client
        .batch_execute("SET TIME ZONE 'Asia/Kolkata'")
        .await
        .unwrap();
    let chains: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    for (n, batch) in made.chunks(7).enumerate() {
        let at: Vec<DateTime<Utc>> = batch.iter().map(|m| m.at).collect();
        let sources: Vec<Option<&str>> = batch.iter().map(|m| m.source).collect();
        let voids: Vec<bool> = batch.iter().map(|m| m.void).collect();
        let decisions: Vec<Value> = batch.iter().map(|m| m.decision.clone()).collect();
        let inserted = client
            .execute(
                "INSERT INTO audit_records (seq, chain, at, request_id, adapter, tool, source_id,
                    void, decision, outcome, duration_us, prev_hash, hash)
                 SELECT nextval('audit_records_seq'), $1, u.at, 'gen', 'mcp', 'interlock_query',
                        u.source, u.void, u.decision, 'ok', 1, '\\x00'::bytea, gen_random_uuid()::text::bytea
                   FROM unnest($2::timestamptz[], $3::text[], $4::boolean[], $5::jsonb[])
                        AS u(at, source, void, decision)",
                &[&chains[n % chains.len()], &at, &sources, &voids, &decisions],
            )
            .await
            .unwrap();
        assert_eq!(inserted, batch.len() as u64);
    }
}

/// What the chart must say for `[since, until)` in buckets of `bucket` seconds.
fn model(
    made: &[Made],
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    bucket: i64,
    source: Option<&str>,
) -> BTreeMap<(String, String, String, DateTime<Utc>), [i64; 3]> {
    let mut want: BTreeMap<_, [i64; 3]> = BTreeMap::new();
    for m in made {
        let Some(s) = m.source else { continue };
        if m.void || m.at < since || m.at >= until || source.is_some_and(|f| f != s) {
            continue;
        }
        let Some(outcomes) = m.decision["policy"].as_array() else {
            continue;
        };
        let secs = m.at.timestamp();
        let at = Utc
            .timestamp_opt(secs - secs.rem_euclid(bucket), 0)
            .unwrap();
        for o in outcomes {
            if o["mode"] != "report" {
                continue;
            }
            let parsed = RuleOutcome {
                policy: String::new(),
                rule: String::new(),
                mode: RuleMode::Report,
                effect: String::new(),
                result: match o["result"].as_str() {
                    Some("matched") => "matched",
                    Some("error") => "error",
                    _ => "not_matched",
                },
                error: None,
                would: o.get("would").cloned(),
            };
            let slot = match parsed.label() {
                "would_change" => 0,
                "no_change" => 1,
                "error" => 2,
                _ => continue,
            };
            let key = (
                s.to_string(),
                o["policy"].as_str().unwrap_or_default().to_string(),
                o["rule"].as_str().unwrap_or_default().to_string(),
                at,
            );
            want.entry(key).or_default()[slot] += 1;
        }
    }
    want
}

fn flatten(series: &[RuleSeries]) -> BTreeMap<(String, String, String, DateTime<Utc>), [i64; 3]> {
    let mut got = BTreeMap::new();
    for s in series {
        let mut totals = [0; 3];
        for b in &s.buckets {
            let counts = [b.would_change, b.no_change, b.errors];
            assert!(counts.iter().any(|n| *n > 0), "an empty bucket: {s:?}");
            for (t, n) in totals.iter_mut().zip(counts) {
                *t += n;
            }
            let key = (s.source.clone(), s.policy.clone(), s.rule.clone(), b.at);
            assert!(got.insert(key, counts).is_none(), "a bucket twice: {s:?}");
        }
        assert_eq!(totals, [s.would_change, s.no_change, s.errors], "{s:?}");
    }
    got
}

async fn count_from(pool: &ControlPool, at: DateTime<Utc>) {
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

#[tokio::test]
async fn counted_minutes_the_audit_records_and_the_model_agree() {
    let db = common::fresh_control_db().await;
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).unwrap();
    partitions::ensure_ahead(&pool, 100_000).await.unwrap();
    let made = generate(0x5eed_0054);
    store(&pool, &made).await;
    // A record whose insert rolls back is counted nowhere.
    {
        let mut client = pool.get().await.unwrap();
        let tx = client.transaction().await.unwrap();
        tx.execute(
            "INSERT INTO audit_records (seq, chain, at, request_id, adapter, tool, source_id,
                decision, outcome, duration_us, prev_hash, hash)
             VALUES (nextval('audit_records_seq'), gen_random_uuid(), $1, 'gone', 'mcp',
                     'interlock_query', 'shop', $2, 'ok', 1, '\\x00', '\\x01')",
            &[
                &(start() + Duration::minutes(1)),
                &json!({"policy": [{"policy": "hours", "rule": "watch-products",
                                    "mode": "report", "result": "matched"}]}),
            ],
        )
        .await
        .unwrap();
        tx.rollback().await.unwrap();
    }
    let month_end = start() + Duration::days(30);
    // Windows read from hours with ragged ends in minutes, and from minutes only.
    let windows: Vec<Window> = vec![
        (start(), month_end, 6 * 3600, None),
        (start(), start() + Duration::hours(1), 60, Some("shop")),
        (
            start() + Duration::days(3),
            start() + Duration::days(17),
            86_400,
            Some("hr"),
        ),
        (
            start() - Duration::days(1),
            month_end + Duration::days(1),
            7 * 86_400,
            None,
        ),
        (
            start() + Duration::minutes(1),
            month_end - Duration::minutes(83),
            54_000,
            None,
        ),
        (
            start() + Duration::minutes(2),
            start() + Duration::days(2),
            1800,
            Some("shop"),
        ),
    ];
    // Counting began before every record (the minutes answer), after every record (the
    // audit records answer), and in the middle of the busiest minutes and of the month
    // (each part answers its side, and a bucket they share is added up).
    let splits = [
        start() - Duration::days(2),
        month_end + Duration::days(2),
        start() + Duration::minutes(2),
        start() + Duration::days(11) + Duration::minutes(17),
    ];
    let mut checked = 0;
    for split in splits {
        count_from(&pool, split.duration_trunc(Duration::minutes(1)).unwrap()).await;
        for &(since, until, bucket, source) in &windows {
            let got = flatten(
                &report_only_series(&pool, since, until, bucket, source)
                    .await
                    .unwrap(),
            );
            let want = model(&made, since, until, i64::from(bucket), source);
            assert!(
                !want.is_empty(),
                "the generator made no report-only outcome"
            );
            assert_eq!(
                got, want,
                "counting from {split}, window {since}..{until}, bucket {bucket} s, source {source:?}"
            );
            checked += want.len();
        }
    }
    assert!(checked > 200, "only {checked} buckets compared");
}

#[tokio::test]
async fn records_without_report_only_outcomes_are_not_counted() {
    let db = common::fresh_control_db().await;
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).unwrap();
    partitions::ensure_ahead(&pool, 100_000).await.unwrap();
    let mut made = generate(7);
    for m in &mut made {
        if let Some(outcomes) = m.decision["policy"].as_array_mut() {
            outcomes.retain(|o| o["mode"] != "report");
        }
    }
    store(&pool, &made).await;
    let rows: i64 = pool
        .get()
        .await
        .unwrap()
        .query_one("SELECT count(*) FROM policy_report_minutes", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 0);
}
