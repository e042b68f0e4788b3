//! Every string an agent can write reaches PostgreSQL as the same value (issue 47, §5).
//!
//! The text that runs is the gateway's re-serialization of the statement, so a string
//! literal must survive it exactly: a value holding consecutive quotes (`'it''''s'`), a
//! backslash before a quote, a dollar sign or a non-ASCII letter must neither be refused
//! nor change. Every value over an alphabet of the characters quoting rests on, up to four
//! long, is written in each spelling PostgreSQL has (a standard string with quotes doubled,
//! an escape string `E'…'`, a dollar-quoted string), decided, and the text that would run is
//! run on PostgreSQL: its value must be the value written. The same forms as an agent sends
//! them, through MCP.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::env::demo_env;
use common::{admin, fresh_database};
use serde_json::json;

const ALPHABET: [char; 7] = ['a', '\'', '\\', '"', ' ', 'é', '$'];

fn values(max_len: usize) -> Vec<String> {
    let mut all = vec![String::new()];
    let mut last = vec![String::new()];
    for _ in 0..max_len {
        let next: Vec<String> = last
            .iter()
            .flat_map(|v| {
                ALPHABET.iter().map(move |c| {
                    let mut w = v.clone();
                    w.push(*c);
                    w
                })
            })
            .collect();
        all.extend(next.iter().cloned());
        last = next;
    }
    all
}

/// The spellings of `v` an agent may write.
fn spellings(v: &str) -> Vec<String> {
    let mut out = vec![
        format!("'{}'", v.replace('\'', "''")),
        format!("E'{}'", v.replace('\\', "\\\\").replace('\'', "\\'")),
    ];
    if !v.contains("$q$") && !v.ends_with('$') {
        out.push(format!("$q${v}$q$"));
    }
    out
}

#[tokio::test]
async fn every_string_reaches_postgresql_as_written() {
    let db = fresh_database("strings").await;
    let client = admin(&db).await;
    let limits = interlock::sql::parse::ParseLimits {
        max_bytes: interlock::sql::input::DEFAULT_MAX_SQL_BYTES,
        ..Default::default()
    };
    let mut failures = Vec::new();
    let mut checked = 0;
    for v in values(4) {
        for literal in spellings(&v) {
            let sql = format!("SELECT {literal} AS v");
            let parsed = match interlock::sql::parse(&sql, 0, &limits) {
                Ok(p) => p,
                Err(e) => {
                    failures.push(format!("{sql}: refused: {e}"));
                    continue;
                }
            };
            let got = client
                .simple_query(&parsed.sql)
                .await
                .map_err(|e| e.to_string())
                .map(|m| {
                    m.into_iter().find_map(|m| match m {
                        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                        _ => None,
                    })
                });
            checked += 1;
            if got != Ok(Some(v.clone())) {
                failures.push(format!(
                    "{sql} runs as {} which PostgreSQL reads as {got:?}, not {v:?}",
                    parsed.sql
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked}:\n{}",
        failures.len(),
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[tokio::test]
async fn the_reviews_strings_are_answered_as_written() {
    let env = demo_env().await;
    for (literal, want) in [
        ("'it''''s'", "it''s"),
        ("'a\\'''", "a\\'"),
        ("E'a\\\\\\''", "a\\'"),
        ("'O''Brien'", "O'Brien"),
    ] {
        let a = env
            .agent_query(json!({"sql": format!("SELECT {literal} AS v")}))
            .await;
        let rows = common::mcp::rows(&a);
        assert_eq!(rows[0]["v"], want, "{literal}: {:?}", a.body);
    }
}
