//! Upgrades without downtime, on real PostgreSQL: while a fleet is upgraded one replica at a
//! time, replicas of the previous release keep serving on the schema the new release has
//! migrated. The record of what each release sends to the control database
//! (`migrations/statements/<release>.json`, made by scripts/record-control-statements from
//! pg_stat_statements over the whole suite) proves it: every statement of every release
//! the schema claims to serve still prepares and runs on it. Also: a gateway refuses a
//! schema newer than it can serve, naming both versions, and a migration never queues the
//! fleet's queries behind its locks for longer than its lock timeout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::control_statements::{Protocol, Recorded, Sent};
use common::env::demo_env;
use common::mcp::{call, MODERN};
use interlock::control::migrate::{self, LockPolicy, Migration, MIGRATIONS};
use interlock::sources::postgres::request::TextParam;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// What one release sends to the control database.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    release: String,
    /// The last migration the release knows.
    schema: i32,
    /// Each statement as sent (one of each shape), checked against later schemas.
    statements: Vec<Sent>,
    /// The same traffic as pg_stat_statements normalizes it, to tell whether a statement
    /// a build sends was recorded.
    normalized: Vec<String>,
    /// What was seen but cannot be checked on its own, with why: statements the tests sent
    /// through a gateway's pool that need what an earlier one of theirs made.
    unverifiable: Vec<String>,
}

fn records_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/statements")
}

fn records() -> Vec<Record> {
    let mut out: Vec<Record> = std::fs::read_dir(records_dir())
        .expect("migrations/statements")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| serde_json::from_slice(&std::fs::read(&p).expect("read")).expect("record"))
        .collect();
    out.sort_by_key(|r| r.schema);
    out
}

/// Whether `migrations` claim to keep a release that knew `schema` working.
fn claims_to_serve(migrations: &[Migration], schema: i32) -> bool {
    migrations
        .iter()
        .filter(|m| m.version > schema)
        .all(|m| m.compatible_from.unwrap_or(m.version) <= schema)
}

#[test]
fn a_release_is_served_only_while_every_later_migration_says_it_keeps_it_working() {
    let m = |version: i32, compatible_from: Option<i32>| Migration {
        version,
        name: "m",
        sql: "",
        compatible_from,
    };
    let cases: &[(&[Migration], i32, bool)] = &[
        (&[m(23, None)], 23, true),
        (&[m(23, None), m(24, Some(23))], 23, true),
        (&[m(23, None), m(24, None)], 23, false),
        (&[m(23, None), m(24, Some(23)), m(25, Some(24))], 23, false),
        (&[m(23, None), m(24, Some(23)), m(25, Some(24))], 24, true),
        (&[m(23, None), m(24, Some(22)), m(25, Some(23))], 22, false),
    ];
    for (migrations, schema, served) in cases {
        let versions: Vec<_> = migrations
            .iter()
            .map(|m| (m.version, m.compatible_from))
            .collect();
        assert_eq!(
            claims_to_serve(migrations, *schema),
            *served,
            "{versions:?} serving {schema}"
        );
    }
}

#[test]
fn a_batch_bound_as_rows_has_one_shape_whatever_its_rows() {
    let rows = |n: usize| {
        let row = |r: usize| format!("($1::uuid, ${}::bigint, ${}::text)", 2 * r + 2, 2 * r + 3);
        let values: Vec<String> = (0..n).map(row).collect();
        format!(
            "INSERT INTO \"audit_records_1\" (chain, seq, x) SELECT v.* FROM (VALUES {}) AS v (chain, seq, x) WHERE v.seq IS NOT NULL",
            values.join(", ")
        )
    };
    let one = shape(&rows(1));
    for n in [2, 4, 32] {
        assert_eq!(shape(&rows(n)), one, "{n} rows");
    }
    // Rows that differ are each kept.
    let unlike = "INSERT INTO t (a, b) VALUES ($1::uuid, $2::text), ($3::text, $4::uuid)";
    assert_eq!(shape(unlike).matches("), (").count(), 1);
}

/// A statement's failure that says the schema no longer fits it: a name it uses is gone or
/// changed (class 42: undefined table, column, function; wrong type), or what it does is
/// no longer supported there (0A). Constraint, data and lock errors of a run with NULL
/// parameters on an empty database are not the schema's doing, and DDL that finds what it
/// makes already there (a migrator's idempotent bootstrap) fits.
fn schema_misfit(e: &tokio_postgres::Error) -> bool {
    const ALREADY_THERE: [&str; 5] = ["42P07", "42701", "42710", "42P06", "42723"];
    e.code().is_some_and(|c| {
        (c.code().starts_with("42") || c.code().starts_with("0A"))
            && !ALREADY_THERE.contains(&c.code())
    })
}

/// A recorded statement that does not fit a schema: which one, and what PostgreSQL said.
#[derive(Debug)]
struct Misfit {
    at: usize,
    line: String,
}

/// The statements of `statements` that do not prepare, or do not run, on the schema of
/// `client`'s database, each with its error. Everything runs in one transaction that is
/// rolled back, each statement in a savepoint of its own: a query string as it was sent, a
/// parsed statement prepared and run with NULL for every parameter.
async fn misfits(client: &mut tokio_postgres::Client, statements: &[Sent]) -> Vec<Misfit> {
    let tx = client.transaction().await.expect("begin");
    tx.batch_execute("SET LOCAL statement_timeout = '5s'; SET LOCAL lock_timeout = '1s'")
        .await
        .expect("timeouts");
    let mut out = Vec::new();
    for (at, Sent { protocol, sql }) in statements.iter().enumerate() {
        tx.batch_execute("SAVEPOINT s").await.expect("savepoint");
        let outcome = match protocol {
            Protocol::Simple => tx.batch_execute(sql).await.map_err(|e| ("run", e)),
            Protocol::Extended => match tx.prepare(sql).await {
                Err(e) => Err(("prepare", e)),
                Ok(st) => {
                    // A NULL of whatever type PostgreSQL inferred for each `$n`.
                    let nulls = vec![TextParam(None); st.params().len()];
                    tx.execute_raw(&st, nulls.iter())
                        .await
                        .map(|_| ())
                        .map_err(|e| ("run", e))
                }
            },
        };
        if let Err((step, e)) = outcome {
            if schema_misfit(&e) {
                let db = e.as_db_error().map(|d| d.message().to_string());
                let line = format!("{step}: {} — {sql}", db.unwrap_or(e.to_string()));
                out.push(Misfit { at, line });
            }
        }
        tx.batch_execute("ROLLBACK TO SAVEPOINT s")
            .await
            .expect("rollback to savepoint");
    }
    tx.rollback().await.expect("rollback");
    out
}

fn lines(misfits: &[Misfit]) -> String {
    misfits
        .iter()
        .map(|m| m.line.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A control database migrated by this build, and a superuser connection to it.
async fn migrated() -> (String, tokio_postgres::Client) {
    let db = common::fresh_control_db().await;
    let client = common::admin(&db).await;
    (db, client)
}

#[tokio::test]
async fn every_release_this_schema_claims_to_serve_still_prepares_and_runs_its_statements() {
    let records = records();
    let current = env!("CARGO_PKG_VERSION");
    assert!(
        records.iter().any(|r| r.release == current),
        "no record of the statements release {current} sends: run scripts/record-control-statements"
    );
    // Expand, then contract one release later: the release before this one must still run.
    let latest = migrate::latest().version;
    if let Some(previous) = records
        .iter()
        .filter(|r| r.release != current && r.schema < latest)
        .max_by_key(|r| r.schema)
    {
        assert!(
            claims_to_serve(MIGRATIONS, previous.schema),
            "a migration after {} breaks release {} (compatible_from unset or newer): a \
             fleet's replicas of that release would stop during the upgrade. Split it: \
             expand now (compatible_from = {}), contract one release later",
            previous.schema,
            previous.release,
            previous.schema
        );
    }
    let (_db, mut client) = migrated().await;
    for record in records
        .iter()
        .filter(|r| claims_to_serve(MIGRATIONS, r.schema))
    {
        assert!(
            record.statements.len() >= 50,
            "the record of {} holds {} statements: was it recorded over the whole suite?",
            record.release,
            record.statements.len()
        );
        let bad = misfits(&mut client, &record.statements).await;
        assert!(
            bad.is_empty(),
            "statements of release {} no longer fit the schema at migration {latest}:\n{}",
            record.release,
            lines(&bad)
        );
    }
}

#[tokio::test]
async fn a_contract_migration_that_breaks_a_recorded_release_is_caught() {
    let record = records()
        .into_iter()
        .find(|r| r.release == env!("CARGO_PKG_VERSION"))
        .expect("the current release's record");
    // Each of these is what a careless contract migration does to what every release uses
    // (a column renamed, a table renamed, a column retyped); the check must name the
    // statements it breaks.
    let breaks = [
        (
            "ALTER TABLE approvals RENAME COLUMN state TO status",
            "approvals",
        ),
        ("ALTER TABLE api_keys RENAME TO keys", "api_keys"),
        (
            "ALTER TABLE approvals ALTER COLUMN expires_at TYPE text",
            "expires_at <= now()",
        ),
    ];
    for (ddl, names) in breaks {
        let (_db, mut client) = migrated().await;
        client.batch_execute(ddl).await.expect(ddl);
        let bad = misfits(&mut client, &record.statements).await;
        assert!(
            bad.iter().any(|b| b.line.contains(names)),
            "{ddl}: no statement with {names} was reported: {bad:?}"
        );
    }
}

#[tokio::test]
async fn the_statements_this_build_sends_are_in_its_record() {
    let record = records()
        .into_iter()
        .find(|r| r.release == env!("CARGO_PKG_VERSION"))
        .expect("the current release's record");
    let recorded: BTreeSet<String> = record.normalized.iter().map(|s| shape(s)).collect();
    let env = demo_env().await;
    let stats = common::admin("postgres").await;
    stats
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await
        .expect("extension");
    // A governed read, a refusal, a write queued, approved and run, the audit verified.
    let url = env.gateway.url("");
    let read =
        json!({"source_id": "shop", "sql": "SELECT id, status FROM public.orders WHERE id = 3"});
    call(&url, Some(&env.agent_key), MODERN, "interlock_query", read).await;
    let refused = json!({"source_id": "shop", "sql": "DROP TABLE public.orders"});
    call(
        &url,
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        refused,
    )
    .await;
    let id = common::approvals::queue(
        &env.gateway,
        &env.agent_key,
        "shop",
        "UPDATE public.orders SET status = 'held' WHERE id = 3",
    )
    .await;
    common::approvals::approve(
        &env.gateway,
        &env.approver_key,
        &id,
        json!({"reason": "ok"}),
    )
    .await;
    common::approvals::wait(&env.gateway, &env.operator_key, &id, common::approvals::ran).await;
    common::http::get_json(&env.gateway.url("/admin/audit/verify"), &env.operator_key).await;
    let sent: BTreeSet<String> = stats
        .query(
            "SELECT s.query FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid \
             WHERE d.datname = $1",
            &[&env.control_db],
        )
        .await
        .expect("pg_stat_statements")
        .iter()
        .map(|r| shape(r.get(0)))
        .collect();
    let unrecorded: Vec<&String> = sent
        .iter()
        .filter(|s| !recorded.contains(*s) && !session_plumbing(s))
        .collect();
    assert!(
        unrecorded.is_empty(),
        "this build sends control-database statements its release record lacks (run \
         scripts/record-control-statements, and check they fit the previous release's \
         schema):\n{}",
        unrecorded
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Whitespace runs as one space: the record and pg_stat_statements may wrap differently.
fn squash(sql: &str) -> String {
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A statement's shape, for telling whether it was recorded: besides whitespace, quoted
/// literals and digit runs (which PostgreSQL 15 keeps in utility statements, e.g. the month
/// in a partition's name and bounds) are placeholders, and a list of them is one (a
/// statement built with as many parameters as it has values), and so is a list of rows
/// alike (the audit writer binds a batch as rows, a few sizes of them).
fn shape(sql: &str) -> String {
    let flat = one_row_each(&flatten(sql));
    let list = regex::Regex::new(r"(\$9|'\?'|9)(, (\$9|'\?'|9))+").expect("regex");
    list.replace_all(&flat, "$1, …").into_owned()
}

/// `sql` with each run of identical parenthesized rows (`(…), (…)`) as its first row.
fn one_row_each(sql: &str) -> String {
    let row = regex::Regex::new(r"\([^()]*\)").expect("regex");
    let mut out = String::with_capacity(sql.len());
    let (mut end, mut previous) = (0, None);
    for m in row.find_iter(sql) {
        let between = &sql[end..m.start()];
        end = m.end();
        if between == ", " && previous == Some(m.as_str()) {
            continue;
        }
        out.push_str(between);
        out.push_str(m.as_str());
        previous = Some(m.as_str());
    }
    out.push_str(&sql[end..]);
    out
}

fn flatten(sql: &str) -> String {
    let mut out = String::new();
    let squashed = squash(sql);
    let mut chars = squashed.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\'' {
            while let Some(n) = chars.next() {
                if n == '\'' && chars.peek() != Some(&'\'') {
                    break;
                }
                if n == '\'' {
                    chars.next();
                }
            }
            out.push_str("'?'");
        } else if c.is_ascii_digit() {
            while chars.peek().is_some_and(|n| n.is_ascii_digit()) {
                chars.next();
            }
            out.push('9');
        } else {
            out.push(c);
        }
    }
    out
}

/// Transaction control and session settings: not about the schema, kept out of the record
/// (a query string of several statements only when every one of them is).
fn session_plumbing(sql: &str) -> bool {
    sql.split(';')
        .filter(|part| !part.trim().is_empty())
        .all(|part| {
            let head = part
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_uppercase();
            matches!(
                head.as_str(),
                "BEGIN"
                    | "COMMIT"
                    | "ROLLBACK"
                    | "SAVEPOINT"
                    | "RELEASE"
                    | "SET"
                    | "RESET"
                    | "START"
            )
        })
}

/// Run with scripts/record-control-statements: merges what the suite's binaries wrote into
/// `INTERLOCK_RECORD_CONTROL_STATEMENTS`, leaves out session plumbing and the migrations'
/// own DDL, keeps one statement of each shape, sets aside (listed) what does not fit this
/// build's own schema on its own, and writes this release's record.
#[tokio::test]
#[ignore = "records the release's control statements; run by scripts/record-control-statements"]
async fn record_control_statements() {
    let dir = std::env::var_os("INTERLOCK_RECORD_MERGE_FROM").expect("INTERLOCK_RECORD_MERGE_FROM");
    let migration_sql: Vec<String> = MIGRATIONS.iter().map(|m| squash(m.sql)).collect();
    let from_migrations = |sql: &str| migration_sql.iter().any(|m| m.contains(sql));
    let mut by_shape = std::collections::BTreeMap::new();
    let mut normalized = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("record dir") {
        let path = entry.expect("entry").path();
        let batch: Recorded =
            serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
        for sent in batch.statements {
            let sql = squash(&sent.sql);
            if session_plumbing(&sql) || from_migrations(&sql) {
                continue;
            }
            by_shape
                .entry((sent.protocol, shape(&sql)))
                .or_insert(Sent {
                    protocol: sent.protocol,
                    sql,
                });
        }
        normalized.extend(
            batch
                .normalized
                .iter()
                .map(|s| squash(s))
                .filter(|s| !session_plumbing(s) && !from_migrations(s)),
        );
    }
    let seen: Vec<Sent> = by_shape.into_values().collect();
    let (_db, mut client) = migrated().await;
    let misfit = misfits(&mut client, &seen).await;
    let set_aside: BTreeSet<usize> = misfit.iter().map(|m| m.at).collect();
    let statements: Vec<Sent> = seen
        .into_iter()
        .enumerate()
        .filter_map(|(at, s)| (!set_aside.contains(&at)).then_some(s))
        .collect();
    let unverifiable: Vec<String> = misfit.into_iter().map(|m| m.line).collect();
    let record = Record {
        release: env!("CARGO_PKG_VERSION").to_string(),
        schema: migrate::latest().version,
        statements,
        normalized: normalized.into_iter().collect(),
        unverifiable,
    };
    let file = records_dir().join(format!("{}.json", record.release));
    std::fs::create_dir_all(records_dir()).expect("dir");
    std::fs::write(&file, serde_json::to_vec_pretty(&record).expect("json")).expect("write");
    println!(
        "{} statements recorded in {} ({} normalized); set aside, as they do not fit this \
         build's own schema on their own:\n{}",
        record.statements.len(),
        file.display(),
        record.normalized.len(),
        record.unverifiable.join("\n")
    );
}

/// Adds a migration row of a release newer than this build.
async fn newer_migration(client: &tokio_postgres::Client, compatible_from: Option<i32>) -> i32 {
    let version = migrate::latest().version + 1;
    client
        .execute(
            "INSERT INTO schema_migrations (version, name, checksum, compatible_from) \
             VALUES ($1, 'from_the_future', 'x', $2)",
            &[&version, &compatible_from],
        )
        .await
        .expect("insert");
    version
}

#[tokio::test]
async fn a_gateway_refuses_a_schema_newer_than_it_can_serve_and_says_both_versions() {
    let latest = migrate::latest();
    for migrate_on_start in [true, false] {
        let (db, client) = migrated().await;
        let newer = newer_migration(&client, None).await;
        let mut settings = common::settings_for(&db);
        settings.control.migrate_on_start = migrate_on_start;
        let err = common::TestGateway::try_start(settings)
            .err()
            .unwrap_or_else(|| {
                panic!("started on a schema too new (migrate_on_start {migrate_on_start})")
            });
        for needle in [
            format!("at migration {newer} (from_the_future)"),
            format!(
                "knows migrations up to {} ({})",
                latest.version, latest.name
            ),
            env!("CARGO_PKG_VERSION").to_string(),
        ] {
            assert!(err.contains(&needle), "{needle:?} missing from: {err}");
        }
    }
}

#[tokio::test]
async fn a_newer_schema_whose_migrations_keep_this_release_working_is_served() {
    let (db, client) = migrated().await;
    newer_migration(&client, Some(migrate::latest().version)).await;
    let gw = common::TestGateway::start(common::settings_for(&db));
    let ready = common::http::client()
        .get(gw.url("/readyz"))
        .send()
        .await
        .expect("readyz");
    assert_eq!(ready.status().as_u16(), 200, "{:?}", ready.text().await);
    gw.stop().await;
}

#[tokio::test]
async fn a_migration_waits_its_lock_timeout_not_the_fleets_time_and_gives_up_cleanly() {
    // A schema migrated by a release before `compatible_from`: completing it needs an
    // exclusive lock on schema_migrations, which a serving replica's open read holds.
    let (db, client) = migrated().await;
    client
        .batch_execute("ALTER TABLE schema_migrations DROP COLUMN compatible_from")
        .await
        .expect("older schema");
    let mut holder = common::admin(&db).await;
    let hold = holder.transaction().await.expect("begin");
    hold.batch_execute("SELECT count(*) FROM schema_migrations")
        .await
        .expect("hold");
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).expect("pool");
    let locks = LockPolicy {
        timeout: Duration::from_millis(300),
        attempts: 3,
    };
    let migrating = tokio::spawn({
        let pool = pool.clone();
        async move { migrate::migrate(&pool, locks).await }
    });
    // While the migration waits, the fleet's queries are never stuck behind it for longer
    // than its lock timeout.
    let reader = common::admin(&db).await;
    let mut slowest = Duration::ZERO;
    while !migrating.is_finished() {
        let t = Instant::now();
        reader
            .query("SELECT version FROM schema_migrations", &[])
            .await
            .expect("fleet read");
        slowest = slowest.max(t.elapsed());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let err = migrating
        .await
        .expect("join")
        .expect_err("the lock was never free");
    let text = err.to_string();
    assert!(
        text.contains("schema_migrations could not take its locks: 3 attempts")
            && text.contains("nothing of it was applied"),
        "{text}"
    );
    assert!(
        slowest < locks.timeout + Duration::from_millis(700),
        "a fleet read waited {slowest:?} behind the migration's lock"
    );
    hold.rollback().await.expect("release");
    migrate::migrate(&pool, locks)
        .await
        .expect("migrates once the lock is free");
    let has: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'schema_migrations'::regclass \
             AND attname = 'compatible_from' AND NOT attisdropped)",
            &[],
        )
        .await
        .expect("column")
        .get(0);
    assert!(has);
}
