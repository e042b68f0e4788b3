//! What a governed read leaves on a pooled source session: nothing.
//!
//! The executor hands a read connection back to the pool without a session reset
//! (`execute::release`). That is sound only if no read can change session state, which
//! rests on three facts, each checked here against PostgreSQL itself:
//!
//! 1. every function the catalogue allows is, in `pg_proc`, neither volatile nor
//!    parallel-unsafe (PostgreSQL's own marking of functions that may change database or
//!    session state), except the reviewed clock and random families, which change nothing
//!    another call can observe;
//! 2. every other function PostgreSQL marks volatile or parallel-unsafe — generated from
//!    `pg_proc`, not listed by hand — and every statement that changes session state is
//!    refused as a read by the decision;
//! 3. after reads of every kind (rows, truncated, failed, timed out, refused parameters) a
//!    pooled session's settings, locks, prepared statements, cursors, listeners and
//!    temporary objects are exactly those of a fresh session;
//!
//! and the statement cache is bounded: 10,000 distinct statement texts through one pooled
//! connection leave no prepared statement on its backend. Behind the parser, PostgreSQL
//! itself runs at most one statement of any text sent to it, in every mode (the extended
//! protocol's Parse refuses two), so a text the decision misread as one statement changes
//! nothing either.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::env::demo_env_with;
use interlock::control::{identities, profiles, sources};
use interlock::governance::{decide, AllowedClass, SqlLimits};
use interlock::sources::catalog;
use interlock::sources::postgres::execute::{self, CapForm, ExecError, Limits, Mode, TextParam};
use interlock::sources::postgres::pool;
use interlock::sql::functions::{self as catalogue, Family};
use tokio_util::sync::CancellationToken;

/// Statements that change session state (or would, outside a read-only transaction).
const SESSION_STATEMENTS: &[&str] = &[
    "SET search_path = pg_catalog",
    "SET LOCAL statement_timeout = 0",
    "SET ROLE postgres",
    "SET SESSION AUTHORIZATION postgres",
    "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
    "RESET ALL",
    "RESET statement_timeout",
    "LISTEN channel",
    "UNLISTEN *",
    "NOTIFY channel",
    "PREPARE p AS SELECT 1",
    "EXECUTE p",
    "DEALLOCATE ALL",
    "DECLARE c CURSOR WITH HOLD FOR SELECT 1",
    "FETCH ALL FROM c",
    "CLOSE ALL",
    "DISCARD ALL",
    "LOCK TABLE public.customers",
    "LOAD 'auto_explain'",
    "BEGIN",
    "COMMIT",
    "SAVEPOINT s",
    "CREATE TEMP TABLE t (a int)",
    "SELECT 1 AS a INTO TEMP t",
    "SELECT id FROM public.customers FOR UPDATE",
    "SELECT set_config('search_path', 'pg_catalog', false)",
    "SELECT pg_catalog.set_config('statement_timeout', '0', false)",
    "SELECT pg_advisory_lock(1)",
    "SELECT pg_try_advisory_lock(1)",
    "SELECT nextval('s')",
    "SELECT lo_open(1, 131072)",
    "SELECT pg_notify('channel', 'x')",
    "SELECT current_setting('search_path')",
    "SELECT (SELECT set_config('a.b', 'c', false))",
    "WITH x AS (SELECT set_config('a.b', 'c', false)) SELECT * FROM x",
    "EXPLAIN ANALYZE SELECT set_config('a.b', 'c', false)",
];

/// What a session carries beyond its connection: settings that differ from their
/// defaults (and the caller's `interlock.*` settings, which `pg_settings` does not list:
/// PostgreSQL hides custom placeholder settings from it), locks, prepared statements,
/// cursors, listeners, temporary schemas, and whether a transaction is open.
const FINGERPRINT: &str = "
SELECT jsonb_build_object(
  'settings', (SELECT jsonb_object_agg(name, setting) FROM pg_settings
               WHERE source NOT IN ('default', 'override', 'configuration file')),
  'locks', (SELECT count(*) FROM pg_locks
            WHERE pid = pg_backend_pid() AND NOT (locktype = 'virtualxid' OR
                  (locktype = 'relation' AND relation::regclass::text LIKE 'pg_%'))),
  'prepared', (SELECT count(*) FROM pg_prepared_statements),
  'cursors', (SELECT count(*) FROM pg_cursors),
  'listening', (SELECT count(*) FROM pg_listening_channels()),
  'temp', (SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.oid = pg_my_temp_schema()),
  'xact', pg_current_xact_id_if_assigned() IS NOT NULL,
  'interlock', jsonb_build_array(current_setting('interlock.identity', true),
                                 current_setting('interlock.roles', true)),
  'user', current_user || '/' || session_user
)::text";

struct Fixture {
    env: common::env::DemoEnv,
    source: sources::Source,
}

async fn fixture() -> Fixture {
    // One pooled connection per pool, so every read below runs on the same session.
    let env = demo_env_with(
        |_| {},
        |s| {
            s.pool_size = Some(1);
            s.statement_timeout_ms = Some(300);
            s.max_bytes = Some(4096);
        },
    )
    .await;
    let source = sources::get_source(&env.pool, "shop")
        .await
        .expect("source");
    Fixture { env, source }
}

#[tokio::test]
async fn every_allowlisted_function_is_neither_volatile_nor_parallel_unsafe() {
    let f = fixture().await;
    let db = common::admin(&f.env.shop_db).await;
    let mut problems = Vec::new();
    for func in catalogue::allowed() {
        let rows = db
            .query(
                "SELECT p.oid::regprocedure::text, p.provolatile::text, p.proparallel::text
                   FROM pg_proc p WHERE p.pronamespace = 'pg_catalog'::regnamespace
                    AND p.proname = $1",
                &[&func.name],
            )
            .await
            .expect("pg_proc");
        if rows.is_empty() {
            if !catalogue::classify::SYNTAX_FORMS
                .iter()
                .any(|(n, _, _)| *n == func.name)
            {
                problems.push(format!(
                    "{}: neither in pg_proc nor a syntactic form",
                    func.name
                ));
            }
            continue;
        }
        for r in rows {
            let (sig, vol, par): (String, String, String) = (r.get(0), r.get(1), r.get(2));
            let reviewed = matches!(func.family, Family::Clock | Family::Random);
            // Clock and random readers may be volatile, never parallel-unsafe.
            let state_changing = par == "u" || (vol == "v" && !reviewed);
            if state_changing {
                problems.push(format!("{sig}: provolatile={vol} proparallel={par}"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "allowlisted functions that may change state: {problems:#?}"
    );
}

#[tokio::test]
async fn every_state_changing_function_and_statement_is_refused_as_a_read() {
    let f = fixture().await;
    let db = common::admin(&f.env.shop_db).await;
    let stored = catalog::refresh(&f.env.pool, &f.source, 10_000)
        .await
        .expect("catalog scan");
    let catalog = catalog::to_catalog(&stored, &f.source.search_path);
    let agent = identities::list_identities(&f.env.pool)
        .await
        .expect("identities")
        .into_iter()
        .find(|i| i.name == "demo-agent")
        .expect("demo-agent");
    let profile = profiles::load_profile(&f.env.pool, agent.id, "shop")
        .await
        .expect("profile")
        .expect("granted");
    // Generated from PostgreSQL's catalog: every function it marks as possibly changing
    // database or session state, called with no arguments (the catalogue is by name), but
    // for the reviewed clock and random families.
    let names: Vec<String> = db
        .query(
            "SELECT DISTINCT proname::text FROM pg_proc
              WHERE pronamespace = 'pg_catalog'::regnamespace
                AND (provolatile = 'v' OR proparallel = 'u') ORDER BY 1",
            &[],
        )
        .await
        .expect("pg_proc")
        .iter()
        .map(|r| r.get::<_, String>(0))
        .filter(|n| {
            !catalogue::lookup(n)
                .is_some_and(|f| matches!(f.family, Family::Clock | Family::Random))
        })
        .collect();
    assert!(
        names.len() > 200,
        "pg_proc lists {} such functions",
        names.len()
    );
    let statements = names
        .iter()
        .flat_map(|n| {
            [
                format!("SELECT {n}()"),
                format!("SELECT pg_catalog.{n}()"),
                format!("SELECT * FROM {n}()"),
                format!("SELECT id FROM public.customers WHERE {n}() IS NULL"),
            ]
        })
        .chain(SESSION_STATEMENTS.iter().map(|s| s.to_string()));
    let limits = SqlLimits::default();
    let mut allowed = Vec::new();
    let mut count = 0;
    for sql in statements {
        count += 1;
        let decision = decide(&sql, 0, &catalog, &profile, &limits);
        if let Some(a) = decision.allowed() {
            if a.class == AllowedClass::Read {
                allowed.push(sql);
            }
        }
    }
    assert!(count > 800);
    assert!(allowed.is_empty(), "allowed as reads: {allowed:#?}");
}

async fn fingerprint(pools: &pool::SourcePools) -> String {
    let conn = pools.read.get().await.expect("connection");
    conn.query_one(FINGERPRINT, &[])
        .await
        .expect("fingerprint")
        .get(0)
}

async fn read(pools: &pool::SourcePools, sql: &str, params: &[&str]) -> Result<usize, ExecError> {
    let params: Vec<TextParam> = params
        .iter()
        .map(|p| TextParam(Some((*p).to_string())))
        .collect();
    let token = CancellationToken::new();
    let limits = Limits {
        max_rows: 5,
        max_bytes: 4096,
    };
    let explain = sql
        .starts_with("EXPLAIN")
        .then_some(interlock::sql::classify::ExplainMode { analyze: false });
    execute::run(
        pools,
        Mode::read(explain, CapForm::Wrapped),
        sql,
        &params,
        limits,
        &token,
        None,
    )
    .await
    .map(|rows| rows.rows.len())
}

#[tokio::test]
async fn reads_of_every_kind_leave_the_pooled_session_as_a_fresh_one() {
    let f = fixture().await;
    let pools = pool::build(&f.source, 1).expect("pools");
    let fresh = fingerprint(&pools).await;
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "SELECT id, name FROM public.customers WHERE id = $1",
            &["7"],
            "ok",
        ),
        ("SELECT id FROM public.customers ORDER BY id", &[], "ok"),
        ("SELECT repeat('x', 100000)", &[], "ok"),
        (
            "SELECT now(), current_date, count(*) FROM public.orders",
            &[],
            "ok",
        ),
        ("EXPLAIN SELECT * FROM public.customers", &[], "ok"),
        (
            "SELECT id FROM public.customers WHERE id = $1",
            &["not a number"],
            "parameter",
        ),
        ("SELECT 1 / 0", &[], "refused"),
        (
            "SELECT count(*) FROM (SELECT generate_series(1, 100000000) AS g) AS s",
            &[],
            "timeout",
        ),
        ("SELECT * FROM public.no_such_table", &[], "refused"),
    ];
    for (sql, params, expected) in cases {
        let got = match read(&pools, sql, params).await {
            Ok(_) => "ok",
            Err(ExecError::Parameter { .. }) => "parameter",
            Err(ExecError::StatementTimeout) => "timeout",
            Err(ExecError::Refused { .. }) => "refused",
            Err(e) => panic!("{sql}: {e}"),
        };
        assert_eq!(got, *expected, "{sql}");
        assert_eq!(fingerprint(&pools).await, fresh, "after {sql}");
    }
}

#[tokio::test]
async fn ten_thousand_distinct_texts_leave_no_prepared_statement_on_the_backend() {
    let f = fixture().await;
    let pools = pool::build(&f.source, 1).expect("pools");
    let memory = "SELECT count(*)::int8, coalesce(sum(total_bytes), 0)::int8
                    FROM pg_backend_memory_contexts WHERE name = 'CachedPlanSource'";
    let before: (i64, i64) = {
        let conn = pools.read.get().await.expect("connection");
        let r = conn.query_one(memory, &[]).await.expect("memory");
        (r.get(0), r.get(1))
    };
    for i in 0..10_000 {
        let sql = format!(
            "SELECT id, name FROM public.customers WHERE id = {}",
            i % 1000 + 1
        );
        let sql = format!("{sql} AND {i} = {i}");
        assert_eq!(read(&pools, &sql, &[]).await.expect("read"), 1, "{sql}");
    }
    let conn = pools.read.get().await.expect("connection");
    // The simple protocol, so the probe itself is not a prepared statement.
    let prepared = conn
        .simple_query("SELECT count(*) FROM pg_prepared_statements")
        .await
        .expect("prepared");
    let prepared = prepared.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
        _ => None,
    });
    assert_eq!(
        prepared.as_deref(),
        Some("0"),
        "prepared statements left on the backend"
    );
    let r = conn.query_one(memory, &[]).await.expect("memory");
    let after: (i64, i64) = (r.get(0), r.get(1));
    assert!(
        after.0 <= before.0 + 2,
        "cached plan sources grew from {before:?} to {after:?}"
    );
}

/// The last line of defence behind the parser: whatever text reaches a source, PostgreSQL
/// itself runs at most one statement of it. Every mode sends its statement as one
/// extended-protocol statement (Parse), which PostgreSQL refuses outright when the text holds
/// two; over the simple protocol (`Query`) it would run them all, in order, before any
/// answer came back. So a text the decision read as one statement, and PostgreSQL reads as
/// two, is refused before either part runs: no smuggled setting outlives the call (the
/// session's identity and masks rest on that), no smuggled write commits. Should any mode
/// move to the simple protocol, this fails. (A read capped in the wrapped form is not
/// listed: the derived table makes a two-statement text a syntax error whatever the
/// protocol, so that case could not fail.)
#[tokio::test]
async fn a_text_that_postgresql_reads_as_two_statements_runs_neither_in_any_mode() {
    let f = fixture().await;
    let pools = pool::build(&f.source, 1).expect("pools");
    let fresh = fingerprint(&pools).await;
    let names = "SELECT string_agg(name, ',' ORDER BY id) FROM public.customers WHERE id <= 3";
    let names_before: String = {
        let conn = pools.read.get().await.expect("connection");
        conn.query_one(names, &[]).await.expect("names").get(0)
    };
    let smuggled_setting = "SELECT id FROM public.customers WHERE id = 1; \
                            SELECT set_config('interlock.identity', 'someone else', false), \
                                   set_config('search_path', 'pg_catalog', false)";
    let smuggled_write = "UPDATE public.customers SET name = name WHERE id = 1; \
                          UPDATE public.customers SET name = 'smuggled' WHERE id <= 3";
    let preview = execute::PreviewTimeouts {
        statement_ms: 1000,
        lock_ms: 1000,
    };
    let cases: &[(&str, Mode, &str)] = &[
        (
            "read, cap appended",
            Mode::Query(CapForm::Appended),
            smuggled_setting,
        ),
        ("plan", Mode::Plan { analyze: false }, smuggled_setting),
        (
            "plan, analyze",
            Mode::Plan { analyze: true },
            smuggled_setting,
        ),
        (
            "cost plan",
            Mode::CostPlan(CapForm::Appended),
            smuggled_setting,
        ),
        ("catalog", Mode::Catalog, smuggled_setting),
        ("estimate", Mode::Estimate, smuggled_write),
        ("dry run", Mode::DryRun(preview), smuggled_write),
        (
            "approved write",
            Mode::Write {
                bound: None,
                keys: None,
            },
            smuggled_write,
        ),
    ];
    let limits = Limits {
        max_rows: 5,
        max_bytes: 4096,
    };
    for (what, mode, sql) in cases {
        let sql = match mode {
            Mode::Plan { analyze: true } => format!("EXPLAIN ANALYZE {sql}"),
            Mode::Plan { analyze: false } => format!("EXPLAIN {sql}"),
            _ => sql.to_string(),
        };
        let token = CancellationToken::new();
        let got = execute::run(&pools, *mode, sql.as_str(), &[], limits, &token, None).await;
        match got {
            Err(ExecError::Refused { ref code, .. }) if code == "42601" => {}
            other => panic!("{what}: {sql}\nwas not refused as two statements: {other:?}"),
        }
        assert_eq!(
            fingerprint(&pools).await,
            fresh,
            "{what}: the session changed"
        );
        let conn = pools.read.get().await.expect("connection");
        let now: String = conn.query_one(names, &[]).await.expect("names").get(0);
        assert_eq!(now, names_before, "{what}: a smuggled write committed");
    }
}
