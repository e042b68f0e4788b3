//! Deep and wide statements of every construct: the decision answers or
//! refuses, and never crashes — on a thread with the 2 MiB stack of a server
//! worker, in the debug build the suite runs.
//!
//! One family per construct, each generated at sizes around the depth bound
//! (well below, just below, just above, far above, and at the text-length cap),
//! plus seeded random mixtures of all constructs. A statement whose measured
//! depth is over the bound must be refused with `sql_too_deep` (400); every
//! other statement must get some verdict.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod sqlfixture;

use interlock::governance::{decide, SqlLimits};
use interlock::sql::depth::DEFAULT_MAX_DEPTH;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// One construct, generated `n` deep or wide.
type Family = (&'static str, fn(usize) -> String);

fn families() -> Vec<Family> {
    vec![
        ("plus chain", |n| format!("SELECT 1{}", " + 1".repeat(n))),
        ("concat chain", |n| {
            format!("SELECT val{} FROM app.t1", " || val".repeat(n))
        }),
        ("cast chain", |n| format!("SELECT 1{}", "::int".repeat(n))),
        ("and chain", |n| {
            format!(
                "SELECT id FROM app.t1 WHERE {}",
                vec!["id = 1"; n.max(1)].join(" AND ")
            )
        }),
        ("or chain", |n| {
            format!(
                "SELECT id FROM app.t1 WHERE {}",
                vec!["id = 1"; n.max(1)].join(" OR ")
            )
        }),
        ("comparison chain", |n| {
            format!("SELECT 1{}", " = true".repeat(n))
        }),
        ("is null chain", |n| {
            format!("SELECT 1{}", " IS NULL".repeat(n))
        }),
        ("between chain", |n| {
            format!("SELECT 1{}", " BETWEEN 0 AND 2".repeat(n))
        }),
        ("like chain", |n| {
            format!("SELECT 'a'{}", " LIKE 'a'".repeat(n))
        }),
        ("in chain", |n| format!("SELECT 1{}", " IN (1)".repeat(n))),
        ("not prefix", |n| format!("SELECT {}true", "NOT ".repeat(n))),
        ("minus prefix", |n| format!("SELECT {}1", "- ".repeat(n))),
        ("parentheses", |n| {
            format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n))
        }),
        ("function nesting", |n| {
            format!("SELECT {}1{}", "abs(".repeat(n), ")".repeat(n))
        }),
        ("scalar subqueries", |n| {
            format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n))
        }),
        ("derived tables", |n| {
            format!(
                "SELECT * FROM {}SELECT 1 AS x{}",
                "(SELECT * FROM ".repeat(n),
                ") AS d".repeat(n)
            )
        }),
        ("nested case", |n| {
            format!(
                "SELECT {}1{}",
                "CASE WHEN true THEN ".repeat(n),
                " END".repeat(n)
            )
        }),
        ("case else chain", |n| {
            format!(
                "SELECT CASE WHEN true THEN 1 ELSE 1{} END",
                " + 1".repeat(n)
            )
        }),
        ("union chain", |n| {
            vec!["SELECT 1, 2"; n.max(1)].join(" UNION ")
        }),
        ("union all of selects from tables", |n| {
            vec!["SELECT id FROM app.t1"; n.max(1)].join(" UNION ALL ")
        }),
        ("subscripts", |n| {
            format!("SELECT ARRAY[1]{}", "[1]".repeat(n))
        }),
        ("array nesting", |n| {
            format!("SELECT {}1{}", "ARRAY[".repeat(n), "]".repeat(n))
        }),
        ("wide select list", |n| {
            format!(
                "SELECT {}",
                vec!["id"; n.max(1)].join(", ") + " FROM app.t1"
            )
        }),
        ("wide in list", |n| {
            format!(
                "SELECT id FROM app.t1 WHERE id IN ({})",
                vec!["1"; n.max(1)].join(", ")
            )
        }),
        ("many joins", |n| {
            let mut sql = "SELECT 1 FROM app.t1 t0".to_string();
            for i in 1..n.max(1) {
                sql.push_str(&format!(" JOIN app.t1 t{i} ON t{i}.id = t0.id"));
            }
            sql
        }),
        ("chain inside parentheses", |n| {
            format!("SELECT {}(1{})", "1 + ".repeat(n / 2), " + 1".repeat(n / 2))
        }),
        ("ctes", |n| {
            let ctes: Vec<String> = (0..n.max(1))
                .map(|i| format!("c{i} AS (SELECT {i} AS x)"))
                .collect();
            format!("WITH {} SELECT 1", ctes.join(", "))
        }),
    ]
}

/// Sizes around the bound, and far past it, as long as the text fits the cap.
fn sizes() -> Vec<usize> {
    let max = DEFAULT_MAX_DEPTH;
    vec![
        1,
        10,
        40,
        // 60–66 straddle the depth up to which the decision runs on the caller's stack.
        60,
        62,
        63,
        64,
        66,
        max / 2,
        max - 2,
        max,
        max + 1,
        max + 10,
        2 * max,
        8 * max,
        30_000,
    ]
}

/// Runs `decide` on a thread with a server worker's stack and returns its
/// outcome code ("allowed" or the refusal code).
fn decide_on_small_stack(sqls: Vec<String>) -> Vec<(String, String)> {
    let handle = std::thread::Builder::new()
        // A server worker's 2 MiB, less room for the server's own frames above the call.
        .stack_size(1536 * 1024)
        .spawn(move || {
            let catalog = sqlfixture::fixture_catalog();
            let profile = sqlfixture::fixture_profile();
            let limits = SqlLimits::default();
            sqls.into_iter()
                .map(|sql| {
                    let decision = decide(&sql, 0, &catalog, &profile, &limits);
                    let code = match decision.refusal() {
                        Some(r) => format!("{}:{}", r.status, r.code),
                        None => "allowed".to_string(),
                    };
                    (sql, code)
                })
                .collect::<Vec<_>>()
        })
        .expect("spawn");
    handle.join().expect("the decision thread must not die")
}

fn measured_depth(sql: &str) -> Option<usize> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let tokens = sqlparser::tokenizer::Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .ok()?;
    Some(interlock::sql::depth::depth(&tokens))
}

#[test]
fn every_construct_at_every_size_gets_a_verdict() {
    let max_bytes = SqlLimits::default().max_sql_bytes;
    let mut cases = Vec::new();
    for (name, make) in families() {
        for n in sizes() {
            let sql = make(n);
            // At the cap itself: the longest text of this construct that fits.
            let sql = if sql.len() > max_bytes {
                let mut k = n;
                let mut s = sql;
                while s.len() > max_bytes && k > 1 {
                    k = k * 9 / 10;
                    s = make(k);
                }
                s
            } else {
                sql
            };
            cases.push((name, sql));
        }
    }
    let outcomes = decide_on_small_stack(cases.iter().map(|(_, s)| s.clone()).collect());
    let mut failures = Vec::new();
    let mut deep_refused = 0;
    for ((name, sql), (_, code)) in cases.iter().zip(&outcomes) {
        let depth = measured_depth(sql);
        if depth.is_some_and(|d| d > DEFAULT_MAX_DEPTH) {
            if code != "400:sql_too_deep" && !code.starts_with("403:sql_unparseable") {
                failures.push(format!("{name} (depth {depth:?}) got {code}"));
            }
            deep_refused += 1;
        }
    }
    println!(
        "sql_depth: {} statements over {} construct families, {} refused as too deep",
        cases.len(),
        families().len(),
        deep_refused
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Sanity: the families do reach past the bound, and shallow ones are answered.
    assert!(deep_refused > families().len());
    let plus_small = decide_on_small_stack(vec!["SELECT 1 + 1 + 1".to_string()]);
    assert_eq!(plus_small[0].1, "allowed");
}

/// Random mixtures: an expression grammar over every chaining construct,
/// nested at random, so no single family's shape is the only one tried.
#[test]
fn random_mixtures_never_crash() {
    let seed: u64 = std::env::var("INTERLOCK_DEPTH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1c0ffee);
    let cases: usize = std::env::var("INTERLOCK_DEPTH_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let mut rng = StdRng::seed_from_u64(seed);
    let sqls: Vec<String> = (0..cases)
        .map(|_| {
            let budget = rng.gen_range(1..6000);
            format!("SELECT {} FROM app.t1", expression(&mut rng, budget))
        })
        .filter(|s| s.len() <= SqlLimits::default().max_sql_bytes)
        .collect();
    let outcomes = decide_on_small_stack(sqls);
    let mut too_deep = 0;
    let mut answered = 0;
    for (sql, code) in &outcomes {
        let depth = measured_depth(sql).unwrap_or(0);
        if depth > DEFAULT_MAX_DEPTH {
            assert!(
                code == "400:sql_too_deep" || code.starts_with("403:sql_unparseable"),
                "seed {seed}: depth {depth} got {code}: {}",
                &sql[..sql.len().min(200)]
            );
            too_deep += 1;
        } else {
            answered += 1;
        }
        assert!(
            !code.starts_with("500"),
            "seed {seed}: the decision failed on {sql}"
        );
    }
    println!(
        "sql_depth: seed {seed}: {} random mixtures, {too_deep} too deep, {answered} within the bound",
        outcomes.len()
    );
    assert!(
        too_deep > 0 && answered > 0,
        "the generator must reach both sides of the bound"
    );
}

/// A random expression of roughly `budget` tokens.
fn expression(rng: &mut StdRng, budget: usize) -> String {
    if budget <= 1 {
        return ["1", "id", "val", "'x'", "true", "NULL"][rng.gen_range(0..6)].to_string();
    }
    // Nesting shrinks the budget geometrically, so the generator's own
    // recursion stays shallow; the chains below make the statements deep.
    let inner = budget - budget / 20 - 1;
    match rng.gen_range(0..10) {
        0 => format!("({})", expression(rng, inner)),
        1 => format!("abs({})", expression(rng, inner)),
        2 => format!("({})::text", expression(rng, inner)),
        3 => format!(
            "CASE WHEN {} THEN {} ELSE 1 END",
            expression(rng, budget / 3),
            expression(rng, budget / 3)
        ),
        4 => format!("NOT ({})", expression(rng, inner)),
        5 => format!("(SELECT {})", expression(rng, inner)),
        _ => {
            // A left-deep chain, the shape the parser builds without recursion.
            let ops = [" + ", " || ", " AND ", " OR ", " = ", " < ", " * "];
            let len = rng.gen_range(1..budget.clamp(2, 3000));
            let mut s = expression(rng, (budget - len) / 2 + 1);
            for _ in 0..len {
                s.push_str(ops[rng.gen_range(0..ops.len())]);
                s.push_str(["1", "id", "val"][rng.gen_range(0..3)]);
            }
            s
        }
    }
}
