//! Audit that one record cannot break: text PostgreSQL cannot store is stored
//! escaped (losslessly, with the original's hash), and a record the database
//! refuses fails alone while the rest of its batch commits — on a real control
//! database, through the writer's own API.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use chrono::Utc;
use interlock_actors::audit::storable::unescape;
use interlock_actors::audit::{AuditConfig, AuditHandle, AuditRecord, RecordOutcome};
use interlock_actors::events::EventBus;
use interlock_actors::supervise::{Supervision, SupervisionConfig};
use sha2::{Digest, Sha256};

fn record(request_id: &str, statement: &str) -> AuditRecord {
    AuditRecord {
        at: Utc::now(),
        request_id: request_id.to_string(),
        identity_id: None,
        identity: Some("demo-agent".into()),
        adapter: "mcp".into(),
        dialect: Some("2026-07-28".into()),
        tool: "interlock_query".into(),
        source_id: Some("shop".into()),
        action: Some("read".into()),
        statement: Some(statement.to_string()),
        fingerprint: None,
        decision: serde_json::json!({"verdict": "refused", "reason": format!("quoted: {statement}")}),
        outcome: RecordOutcome::Refused,
        row_count: None,
        duration_us: 1,
        cache_hit: false,
        approval_id: None,
        statement_sha256: None,
    }
}

async fn writer(db: &str) -> (AuditHandle, interlock::control::ControlPool, Supervision) {
    let pool = interlock::control::connect_pool(&common::settings_for(db).control).expect("pool");
    let supervision = Supervision::new(SupervisionConfig::default(), EventBus::default());
    let handle = AuditHandle::start(pool.clone(), AuditConfig::default(), &supervision);
    (handle, pool, supervision)
}

/// The log verified, and found whole.
async fn verified(
    pool: &interlock::control::ControlPool,
) -> interlock::control::audit::VerifyReport {
    let report = interlock::control::audit::verify(pool)
        .await
        .expect("verify");
    assert!(report.ok, "{:?}", report.first_break);
    report
}

#[actix_rt::test]
async fn text_with_nul_is_stored_escaped_and_verifiable() {
    let db = common::fresh_control_db().await;
    let (audit, pool, _supervision) = writer(&db).await;
    let cases = [
        "SELECT 'a\0b'",
        "SELECT E'\\\\0' -- \0 and a backslash",
        "\0",
        "SELECT 'plain \\ text'",
    ];
    for (i, sql) in cases.iter().enumerate() {
        let seq = audit.append(record(&format!("nul-{i}"), sql)).await;
        assert!(seq.is_ok(), "{sql:?}: {seq:?}");
    }
    let client = pool.get().await.expect("client");
    for (i, sql) in cases.iter().enumerate() {
        let row = client
            .query_one(
                "SELECT statement, statement_sha256 FROM audit_records WHERE request_id = $1",
                &[&format!("nul-{i}")],
            )
            .await
            .expect("stored");
        let stored: String = row.get(0);
        let hash: Option<String> = row.get(1);
        if sql.contains('\0') {
            assert_eq!(unescape(&stored), *sql, "lossless");
            assert_eq!(
                hash.as_deref(),
                Some(hex::encode(Sha256::digest(sql.as_bytes())).as_str()),
                "the original bytes' hash"
            );
        } else {
            assert_eq!(stored, *sql, "text without NUL is stored as it came");
            assert_eq!(hash, None);
        }
    }
    let report = verified(&pool).await;
    assert_eq!(report.records, cases.len() as u64);
}

#[actix_rt::test]
async fn a_record_the_database_refuses_fails_alone() {
    let db = common::fresh_control_db().await;
    let (audit, pool, _supervision) = writer(&db).await;
    // A record the database refuses, whatever the gateway does to make it storable.
    pool.get()
        .await
        .expect("client")
        .batch_execute(
            "CREATE FUNCTION refuse_poison() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN IF NEW.request_id LIKE 'poison%' THEN RAISE EXCEPTION 'poisoned record'; END IF;
             RETURN NEW; END $$;
             CREATE TRIGGER refuse_poison BEFORE INSERT ON audit_records
             FOR EACH ROW EXECUTE FUNCTION refuse_poison();",
        )
        .await
        .expect("trigger");
    // Many concurrent appends, so that the poisoned ones share batches with good ones.
    let ids: Vec<String> = (0..40)
        .map(|i| {
            if i % 10 == 3 {
                format!("poison-{i}")
            } else {
                format!("good-{i}")
            }
        })
        .collect();
    let results =
        futures_util::future::join_all(ids.iter().map(|id| audit.append(record(id, "SELECT 1"))))
            .await;
    for (id, result) in ids.iter().zip(&results) {
        assert_eq!(result.is_ok(), id.starts_with("good"), "{id}: {result:?}");
    }
    assert!(
        audit.is_healthy(),
        "a refused record does not make audit unavailable"
    );
    let report = verified(&pool).await;
    assert_eq!(
        (report.records, report.voids, report.pending),
        (40, 4, 0),
        "every good record, and a void at each refused one's seq: gap-free at once"
    );
    // The next record still commits.
    assert!(audit.append(record("after", "SELECT 2")).await.is_ok());
    // One at a time (each a batch of one, whose insert takes its own seq): a refused
    // record's seq is read back and voided at once too.
    for id in ["poison-a", "good-b", "poison-c", "good-d"] {
        let stored = audit.append(record(id, "SELECT 3")).await;
        assert_eq!(stored.is_ok(), id.starts_with("good"), "{id}: {stored:?}");
    }
    let report = verified(&pool).await;
    assert_eq!((report.records, report.voids, report.pending), (45, 6, 0));
}

/// Two writers (two gateways' audit actors) on one control database, appending at once:
/// every record commits, once, each writer in a chain of its own, the seqs gap-free —
/// neither writer waits for or checks the other.
#[actix_rt::test]
async fn two_writers_append_in_chains_of_their_own_with_gap_free_seqs() {
    let db = common::fresh_control_db().await;
    let (a, pool, _sa) = writer(&db).await;
    let (b, _, _sb) = writer(&db).await;
    let appends = (0..400).map(|i| {
        let w = if i % 2 == 0 { &a } else { &b };
        w.append(record(&format!("w-{i}"), "SELECT 1"))
    });
    let results = futures_util::future::join_all(appends).await;
    let mut seqs: Vec<i64> = results
        .iter()
        .map(|r| *r.as_ref().expect("every record commits"))
        .collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=400).collect::<Vec<i64>>(), "each seq once");
    let report = verified(&pool).await;
    assert_eq!((report.records, report.chains, report.voids), (400, 2, 0));
    let stored: i64 = pool
        .get()
        .await
        .expect("client")
        .query_one("SELECT count(DISTINCT request_id) FROM audit_records", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(stored, 400, "no record twice");
}

/// A writer remembers where its chain ends. When the table lost the chain's newest record
/// (a restore rolled it back), the writer does not paper over the loss: its next record
/// still follows the lost one, and verification names the chain's missing record.
#[actix_rt::test]
async fn a_record_lost_from_the_table_stays_visible_as_a_break_in_its_chain() {
    let db = common::fresh_control_db().await;
    let (audit, pool, _supervision) = writer(&db).await;
    for i in 0..3 {
        audit
            .append(record(&format!("r-{i}"), "SELECT 1"))
            .await
            .expect("append");
    }
    pool.get()
        .await
        .expect("client")
        .execute("DELETE FROM audit_records WHERE seq = 3", &[])
        .await
        .expect("roll back the newest record");
    let seq = audit
        .append(record("after", "SELECT 2"))
        .await
        .expect("append");
    assert_eq!(seq, 4, "seqs are never handed out twice");
    let report = interlock::control::audit::verify(&pool)
        .await
        .expect("verify");
    let broke = report.first_break.expect("the loss is reported");
    assert_eq!(broke.seq, 4);
    assert!(
        broke.reason.contains("record 4 of chain")
            && broke.reason.contains("record 3 of that chain is due"),
        "{}",
        broke.reason
    );
}

/// A seq that a writer took and never used (it died between taking and inserting, or its
/// batch's commit was lost): the tree stops before it, verification counts it as pending,
/// and after the grace the ledger fills it with a void, so the tree reaches the head.
#[actix_rt::test]
async fn a_seq_no_batch_used_is_voided_and_the_tree_goes_past_it() {
    let db = common::fresh_control_db().await;
    let (audit, pool, _supervision) = writer(&db).await;
    audit
        .append(record("before", "SELECT 1"))
        .await
        .expect("append");
    let taken: i64 = pool
        .get()
        .await
        .expect("client")
        .query_one("SELECT nextval('audit_records_seq')", &[])
        .await
        .expect("a writer takes a seq and dies")
        .get(0);
    assert_eq!(taken, 2);
    let after = audit
        .append(record("after", "SELECT 2"))
        .await
        .expect("append");
    assert_eq!(after, 3);

    assert_eq!(interlock::control::ledger::extend(&pool).await.unwrap(), 1);
    let report = verified(&pool).await;
    assert_eq!((report.records, report.pending, report.voids), (2, 1, 0));

    tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
    assert_eq!(interlock::control::ledger::extend(&pool).await.unwrap(), 3);
    let report = verified(&pool).await;
    assert_eq!((report.records, report.pending, report.voids), (3, 0, 1));
    // A void is not a call: the listing leaves it out.
    let listed = interlock::control::audit::list(
        &pool,
        &interlock::control::audit::AuditFilter {
            limit: 10,
            ..Default::default()
        },
    )
    .await
    .expect("list");
    assert_eq!(listed.iter().map(|(s, _)| *s).collect::<Vec<_>>(), [3, 1]);
    // Tampering with the void is found like tampering with any record.
    pool.get()
        .await
        .expect("client")
        .execute(
            "UPDATE audit_records SET decision = '{\"void\": true}' WHERE seq = 2",
            &[],
        )
        .await
        .expect("tamper");
    let report = interlock::control::audit::verify(&pool)
        .await
        .expect("verify");
    assert_eq!(report.first_break.map(|b| b.seq), Some(2));
}

/// A record of a batch of `size`, its fields varied by its place `i` (absent or present,
/// ASCII or not), so that rows of every batch differ from their neighbours.
fn varied(size: usize, i: usize) -> AuditRecord {
    let mut r = record(
        &format!("batch-{size}-{i}"),
        &format!("SELECT {i} AS \"é{size}\" -- ☃ ' \\ "),
    );
    r.identity_id = (i % 2 == 0).then(uuid::Uuid::new_v4);
    r.identity = (i % 3 != 0).then(|| format!("agent-{i}"));
    r.dialect = (i % 4 != 1).then(|| "2025-11-25".into());
    r.source_id = (i % 5 != 2).then(|| "shop".into());
    r.action = (i % 2 == 1).then(|| "read".into());
    r.statement = (i % 7 != 3).then_some(r.statement.unwrap_or_default());
    r.fingerprint = (i % 3 == 1).then(|| format!("{i:032x}"));
    r.decision = serde_json::json!({"verdict": "allow", "place": i, "size": size, "nested": {"list": [i, null, "x"]}});
    r.outcome = [
        RecordOutcome::Ok,
        RecordOutcome::Refused,
        RecordOutcome::Error,
    ][i % 3];
    r.row_count = (i % 2 == 1).then_some(i as i64 * 7);
    r.duration_us = 10 + i as i64;
    r.cache_hit = i % 4 == 0;
    r.approval_id = (i % 6 == 5).then(uuid::Uuid::new_v4);
    r
}

/// Batches of every size, bound as rows (a few sizes, padded with rows of NULLs) or as one
/// array per column (the largest), store every field of every record as it came, each
/// record once, gap-free and verifiable.
#[actix_rt::test]
async fn batches_of_every_size_store_every_record_as_it_came() {
    let db = common::fresh_control_db().await;
    let (audit, pool, _supervision) = writer(&db).await;
    let sizes = [2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 70, 100];
    let mut given = Vec::new();
    for size in sizes {
        let records: Vec<AuditRecord> = (0..size).map(|i| varied(size, i)).collect();
        let appended =
            futures_util::future::join_all(records.iter().map(|r| audit.append(r.clone()))).await;
        for (r, seq) in records.iter().zip(&appended) {
            assert!(seq.is_ok(), "{}: {seq:?}", r.request_id);
        }
        given.extend(records);
    }
    let report = verified(&pool).await;
    assert_eq!(
        (report.records, report.voids, report.pending),
        (given.len() as u64, 0, 0)
    );
    let client = pool.get().await.expect("client");
    for r in &given {
        let row = client
            .query_one(
                "SELECT identity_id, identity, dialect, source_id, action, statement, fingerprint,
                        decision, outcome, row_count, duration_us, cache_hit, approval_id, at
                   FROM audit_records WHERE request_id = $1",
                &[&r.request_id],
            )
            .await
            .expect("stored once");
        let stored = (
            row.get::<_, Option<uuid::Uuid>>(0),
            row.get::<_, Option<String>>(1),
            row.get::<_, Option<String>>(2),
            row.get::<_, Option<String>>(3),
            row.get::<_, Option<String>>(4),
            row.get::<_, Option<String>>(5),
            row.get::<_, Option<String>>(6),
            row.get::<_, serde_json::Value>(7),
            row.get::<_, String>(8),
        );
        let given_row = (
            r.identity_id,
            r.identity.clone(),
            r.dialect.clone(),
            r.source_id.clone(),
            r.action.clone(),
            r.statement.clone(),
            r.fingerprint.clone(),
            r.decision.clone(),
            r.outcome.as_str().to_string(),
        );
        assert_eq!(stored, given_row, "{}", r.request_id);
        let rest = (
            row.get::<_, Option<i64>>(9),
            row.get::<_, i64>(10),
            row.get::<_, bool>(11),
            row.get::<_, Option<uuid::Uuid>>(12),
            row.get::<_, chrono::DateTime<Utc>>(13).timestamp_micros(),
        );
        let given_rest = (
            r.row_count,
            r.duration_us,
            r.cache_hit,
            r.approval_id,
            r.at.timestamp_micros(),
        );
        assert_eq!(rest, given_rest, "{}", r.request_id);
    }
    // Both ways of binding a batch of many ran, so neither went untested.
    let (as_rows, _) = statement_counts(&client, "INSERT INTO %(chain, seq%FROM (VALUES%").await;
    assert!(as_rows > 0, "no batch went as rows");
    let (as_arrays, _) = statement_counts(&client, "INSERT INTO %(chain, seq%FROM unnest(%").await;
    assert!(as_arrays > 0, "no batch went as arrays");
}

/// How often the statements of `client`'s database whose text is like `pattern` ran, and
/// how often they were planned (pg_stat_statements, which every test cluster preloads;
/// plans are counted only with `pg_stat_statements.track_planning` on).
async fn statement_counts(client: &tokio_postgres::Client, pattern: &str) -> (i64, i64) {
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await
        .expect("extension");
    let row = client
        .query_one(
            "SELECT coalesce(sum(calls), 0)::bigint, coalesce(sum(plans), 0)::bigint
               FROM pg_stat_statements
              WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND query LIKE $1",
            &[&pattern],
        )
        .await
        .expect("statements");
    (row.get(0), row.get(1))
}

/// The audit writer's own connections plan its statements once: the seqs of a batch of
/// many (whose estimate depends on the batch's size, so PostgreSQL would otherwise plan
/// them again at every batch) are planned at most once per connection however many
/// batches take them (pg_stat_statements counts plans here).
#[actix_rt::test]
async fn the_audit_connections_plan_each_statement_once() {
    let db = common::fresh_control_db().await;
    let admin = common::admin(&db).await;
    admin
        .batch_execute(&format!(
            "CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
             ALTER DATABASE \"{db}\" SET pg_stat_statements.track_planning = on"
        ))
        .await
        .expect("track planning");
    let settings = common::settings_for(&db);
    let pool = interlock::control::pool::audit_pool(&settings.control).expect("audit pool");
    let supervision = Supervision::new(SupervisionConfig::default(), EventBus::default());
    let audit = AuditHandle::start(pool, AuditConfig::default(), &supervision);
    for burst in 0..12 {
        let appends =
            (0..9).map(|i| audit.append(record(&format!("plan-{burst}-{i}"), "SELECT 1")));
        for seq in futures_util::future::join_all(appends).await {
            seq.expect("append");
        }
    }
    let (calls, plans) = statement_counts(&admin, "%nextval%generate_series%").await;
    assert!(calls >= 6, "batches of many took their seqs: {calls}");
    assert!(plans <= 2, "planned {plans} times for {calls} batches");
}
