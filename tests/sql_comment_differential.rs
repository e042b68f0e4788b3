//! The trace comment never changes what runs (issue 30), decided by PostgreSQL itself: every
//! statement of the SQL-safety corpus, as sent, and as a read runs it (re-serialized, under
//! the row cap in the form the gateway picks, and in the derived-table form),
//! is planned by PostgreSQL with and without the sqlcommenter comment the gateway appends
//! (`/*traceparent='…'*/`, random ids); both must fail with the same SQLSTATE or give the
//! same plan, output columns included (`EXPLAIN (VERBOSE, COSTS OFF)`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod sqlfixture;

use std::path::PathBuf;

use interlock::sql::cap::capped;
use interlock::telemetry::traces::propagation::sql_comment;
use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};
use rand::Rng;

fn fixture_sql() -> String {
    std::fs::read_to_string(PathBuf::from(sqlfixture::corpus::FIXTURE_DIR).join("schema.sql"))
        .expect("schema.sql")
        .lines()
        .filter(|l| !l.trim_start().starts_with('\\'))
        .collect::<Vec<_>>()
        .join("\n")
}

fn random_comment(rng: &mut impl Rng) -> String {
    let cx = SpanContext::new(
        TraceId::from_bytes(rng.gen::<[u8; 16]>()),
        SpanId::from_bytes(rng.gen::<[u8; 8]>()),
        if rng.gen() {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        },
        false,
        TraceState::default(),
    );
    sql_comment(&cx)
}

/// PostgreSQL's plan of `sql`, or the SQLSTATE it refused it with.
async fn planned(db: &tokio_postgres::Client, sql: &str) -> Result<Vec<String>, String> {
    match db
        .query(&format!("EXPLAIN (VERBOSE, COSTS OFF) {sql}"), &[])
        .await
    {
        Ok(rows) => Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect()),
        Err(e) => Err(e
            .code()
            .map_or_else(|| e.to_string(), |c| c.code().to_string())),
    }
}

#[tokio::test]
async fn the_trace_comment_never_changes_what_postgresql_plans() {
    let db_name = common::fresh_database("comment").await;
    let db = common::admin(&db_name).await;
    db.batch_execute(&fixture_sql())
        .await
        .expect("fixture schema");
    db.batch_execute("SET search_path = app, public")
        .await
        .unwrap();
    let mut rng = rand::thread_rng();
    let cases = sqlfixture::corpus::load_cases();
    assert!(cases.len() > 100, "the corpus");
    let mut planned_both = 0;
    let mut appended = 0;
    for case in &cases {
        let sql = case.sql.trim_end().trim_end_matches(';');
        let limits = interlock::sql::parse::ParseLimits {
            max_bytes: interlock::sql::input::DEFAULT_MAX_SQL_BYTES,
            ..Default::default()
        };
        let mut texts = vec![sql.to_string()];
        // What a read runs: the re-serialized statement under the row cap in the form the
        // gateway picks for it (an appended LIMIT where the statement takes one, else a
        // derived table), and the derived-table form as well.
        if let Ok(parsed) = interlock::sql::parse(sql, 0, &limits) {
            let form = interlock::sql::cap_form(&parsed.statement);
            appended += usize::from(form == interlock::sql::CapForm::Appended);
            texts.push(capped(&parsed.sql, form, 10));
            texts.push(capped(&parsed.sql, interlock::sql::CapForm::Wrapped, 10));
        }
        for sent in texts {
            let comment = random_comment(&mut rng);
            let plain = planned(&db, &sent).await;
            let commented = planned(&db, &format!("{sent}{comment}")).await;
            assert_eq!(
                plain, commented,
                "{}: the comment changed what PostgreSQL makes of {sent:?}",
                case.id
            );
            planned_both += usize::from(plain.is_ok());
        }
    }
    // The property is about statements PostgreSQL runs, not only ones it refuses.
    assert!(planned_both > 100, "only {planned_both} statements planned");
    assert!(
        appended > 50,
        "only {appended} statements take an appended LIMIT"
    );
}
