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

/// One construct, generated `n` deep or wide, with the nesting levels each unit of `n`
/// adds by the documented rule (each operator or infix keyword of a chain, each cast,
/// parenthesis, `CASE` and set operation adds a level): at least `lo` and at most `hi` per
/// unit, plus at most [`BASE`]. The expectation comes from the generator, never from the
/// product's own depth function.
struct Family {
    name: &'static str,
    make: fn(usize) -> String,
    lo: usize,
    hi: usize,
}

/// Levels a statement has besides its generated units (SELECT, a FROM, a WHERE).
const BASE: usize = 8;

/// A family as (name, generator, levels per unit at least, at most).
type FamilyRow = (&'static str, fn(usize) -> String, usize, usize);

/// The families.
fn families() -> Vec<Family> {
    let table: Vec<FamilyRow> = vec![
        (
            "plus chain",
            |n| format!("SELECT 1{}", " + 1".repeat(n)),
            1,
            1,
        ),
        (
            "concat chain",
            |n| format!("SELECT val{} FROM app.t1", " || val".repeat(n)),
            1,
            1,
        ),
        (
            "cast chain",
            |n| format!("SELECT 1{}", "::int".repeat(n)),
            1,
            1,
        ),
        (
            "and chain",
            |n| {
                format!(
                    "SELECT id FROM app.t1 WHERE {}",
                    vec!["id = 1"; n.max(1)].join(" AND ")
                )
            },
            1,
            2,
        ),
        (
            "or chain",
            |n| {
                format!(
                    "SELECT id FROM app.t1 WHERE {}",
                    vec!["id = 1"; n.max(1)].join(" OR ")
                )
            },
            1,
            2,
        ),
        (
            "comparison chain",
            |n| format!("SELECT 1{}", " = true".repeat(n)),
            1,
            1,
        ),
        (
            "is null chain",
            |n| format!("SELECT 1{}", " IS NULL".repeat(n)),
            1,
            1,
        ),
        (
            "between chain",
            |n| format!("SELECT 1{}", " BETWEEN 0 AND 2".repeat(n)),
            1,
            2,
        ),
        (
            "like chain",
            |n| format!("SELECT 'a'{}", " LIKE 'a'".repeat(n)),
            1,
            1,
        ),
        (
            "in chain",
            |n| format!("SELECT 1{}", " IN (1)".repeat(n)),
            1,
            2,
        ),
        (
            "not prefix",
            |n| format!("SELECT {}true", "NOT ".repeat(n)),
            1,
            1,
        ),
        (
            "minus prefix",
            |n| format!("SELECT {}1", "- ".repeat(n)),
            1,
            1,
        ),
        (
            "parentheses",
            |n| format!("SELECT {}1{}", "(".repeat(n), ")".repeat(n)),
            1,
            1,
        ),
        (
            "function nesting",
            |n| format!("SELECT {}1{}", "abs(".repeat(n), ")".repeat(n)),
            1,
            2,
        ),
        (
            "scalar subqueries",
            |n| format!("SELECT {}1{}", "(SELECT ".repeat(n), ")".repeat(n)),
            1,
            3,
        ),
        (
            "derived tables",
            |n| {
                format!(
                    "SELECT * FROM {}(SELECT 1 AS x) AS d{}",
                    "(SELECT * FROM ".repeat(n),
                    ") AS d".repeat(n)
                )
            },
            1,
            3,
        ),
        (
            "nested case",
            |n| {
                format!(
                    "SELECT {}1{}",
                    "CASE WHEN true THEN ".repeat(n),
                    " END".repeat(n)
                )
            },
            1,
            2,
        ),
        (
            "case else chain",
            |n| {
                format!(
                    "SELECT CASE WHEN true THEN 1 ELSE 1{} END",
                    " + 1".repeat(n)
                )
            },
            1,
            1,
        ),
        (
            "union chain",
            |n| vec!["SELECT 1, 2"; n.max(1)].join(" UNION "),
            1,
            1,
        ),
        (
            "union all of selects from tables",
            |n| vec!["SELECT id FROM app.t1"; n.max(1)].join(" UNION ALL "),
            1,
            1,
        ),
        (
            "subscripts",
            |n| format!("SELECT ARRAY[1]{}", "[1]".repeat(n)),
            0,
            2,
        ),
        (
            "array nesting",
            |n| format!("SELECT {}1{}", "ARRAY[".repeat(n), "]".repeat(n)),
            1,
            2,
        ),
        (
            "wide select list",
            |n| {
                format!(
                    "SELECT {}",
                    vec!["id"; n.max(1)].join(", ") + " FROM app.t1"
                )
            },
            0,
            0,
        ),
        (
            "wide in list",
            |n| {
                format!(
                    "SELECT id FROM app.t1 WHERE id IN ({})",
                    vec!["1"; n.max(1)].join(", ")
                )
            },
            0,
            0,
        ),
        (
            "many joins",
            |n| {
                let mut sql = "SELECT 1 FROM app.t1 t0".to_string();
                for i in 1..n.max(1) {
                    sql.push_str(&format!(" JOIN app.t1 t{i} ON t{i}.id = t0.id"));
                }
                sql
            },
            0,
            2,
        ),
        (
            "chain inside parentheses",
            |n| format!("SELECT {}(1{})", "1 + ".repeat(n / 2), " + 1".repeat(n / 2)),
            0,
            1,
        ),
        (
            "ctes",
            |n| {
                let ctes: Vec<String> = (0..n.max(1))
                    .map(|i| format!("c{i} AS (SELECT {i} AS x)"))
                    .collect();
                format!("WITH {} SELECT 1", ctes.join(", "))
            },
            0,
            0,
        ),
    ];
    table
        .into_iter()
        .map(|(name, make, lo, hi)| Family { name, make, lo, hi })
        .collect()
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

#[test]
fn every_construct_at_every_size_gets_the_verdict_its_depth_calls_for() {
    let max_bytes = SqlLimits::default().max_sql_bytes;
    let max = DEFAULT_MAX_DEPTH;
    // (family, units, statement)
    let mut cases = Vec::new();
    for f in families() {
        for n in sizes() {
            // At the cap itself: the longest text of this construct that fits.
            let mut k = n;
            let mut sql = (f.make)(k);
            while sql.len() > max_bytes && k > 1 {
                k = k * 9 / 10;
                sql = (f.make)(k);
            }
            cases.push((f.name, f.lo, f.hi, k, sql));
        }
    }
    let outcomes = decide_on_small_stack(cases.iter().map(|c| c.4.clone()).collect());
    let mut failures = Vec::new();
    let (mut deep, mut shallow, mut allowed_small) = (0, 0, 0);
    for ((name, lo, hi, k, sql), (_, code)) in cases.iter().zip(&outcomes) {
        let (least, most) = (lo * k, hi * k + BASE);
        let too_long = sql.len() > max_bytes;
        if least > max && !too_long {
            // Deeper than the bound by construction: refused for its depth.
            if code != "400:sql_too_deep" {
                failures.push(format!("{name} ×{k} (depth ≥ {least}) got {code}"));
            }
            deep += 1;
        } else if most <= max {
            // Within the bound by construction: never refused for depth.
            if code == "400:sql_too_deep" {
                failures.push(format!("{name} ×{k} (depth ≤ {most}) refused as too deep"));
            }
            shallow += 1;
        }
        assert!(!code.starts_with("500"), "{name} ×{k}: the decision failed");
        // Small statements of every construct are allowed outright (the fixture grants
        // app.t1), so a refusal of any kind there is a false one.
        if *k <= 10 {
            if code != "allowed" {
                failures.push(format!("{name} ×{k} got {code}: {sql}"));
            }
            allowed_small += 1;
        }
    }
    println!(
        "sql_depth: {} statements over {} construct families: {deep} deeper than the bound, \
         {shallow} within it, {allowed_small} small ones allowed",
        cases.len(),
        families().len(),
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Floors: both sides of the bound are reached by most families.
    assert!(deep >= 3 * families().len(), "{deep} deep statements");
    assert!(
        shallow >= 8 * families().len(),
        "{shallow} shallow statements"
    );
    assert_eq!(allowed_small, 2 * families().len());
}

/// Random mixtures: an expression grammar over every chaining construct,
/// nested at random, so no single family's shape is the only one tried. The generator
/// knows the depth it built (at least, at most); statements it built within the bound are
/// never refused for depth, those it built past it always are.
#[test]
fn random_mixtures_get_the_verdict_their_depth_calls_for() {
    let seed: u64 = std::env::var("INTERLOCK_DEPTH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1c0ffee);
    let cases: usize = std::env::var("INTERLOCK_DEPTH_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let max = DEFAULT_MAX_DEPTH;
    let mut rng = StdRng::seed_from_u64(seed);
    let built: Vec<Built> = (0..cases)
        .map(|_| {
            let budget = rng.gen_range(1..6000);
            let e = expression(&mut rng, budget);
            Built {
                sql: format!("SELECT {} FROM app.t1", e.sql),
                lo: e.lo,
                hi: e.hi + BASE,
            }
        })
        .filter(|b| b.sql.len() <= SqlLimits::default().max_sql_bytes)
        .collect();
    let outcomes = decide_on_small_stack(built.iter().map(|b| b.sql.clone()).collect());
    let (mut deep, mut shallow, mut between) = (0, 0, 0);
    for (b, (sql, code)) in built.iter().zip(&outcomes) {
        let shown = &sql[..sql.len().min(200)];
        assert!(
            !code.starts_with("500"),
            "seed {seed}: the decision failed on {shown}"
        );
        if b.lo > max {
            assert_eq!(
                code, "400:sql_too_deep",
                "seed {seed}: depth ≥ {}: {shown}",
                b.lo
            );
            deep += 1;
        } else if b.hi <= max {
            assert_ne!(
                code, "400:sql_too_deep",
                "seed {seed}: depth ≤ {}: {shown}",
                b.hi
            );
            shallow += 1;
        } else {
            between += 1;
        }
    }
    println!(
        "sql_depth: seed {seed}: {} random mixtures: {deep} deeper than the bound, \
         {shallow} within it, {between} near it",
        outcomes.len()
    );
    // Floors for the default seed: both sides reached, most statements decided either way.
    assert!(
        deep >= outcomes.len() / 10,
        "{deep} deep of {}",
        outcomes.len()
    );
    assert!(
        shallow >= outcomes.len() / 10,
        "{shallow} shallow of {}",
        outcomes.len()
    );
    assert!(
        between <= outcomes.len() / 2,
        "{between} undetermined of {}",
        outcomes.len()
    );
}

struct Built {
    sql: String,
    lo: usize,
    hi: usize,
}

/// A random expression of roughly `budget` tokens, with the nesting depth it has by
/// construction: at least `lo`, at most `hi` levels.
fn expression(rng: &mut StdRng, budget: usize) -> Built {
    if budget <= 1 {
        let leaf = ["1", "id", "val", "'x'", "true", "NULL"][rng.gen_range(0..6)];
        return Built {
            sql: leaf.to_string(),
            lo: 0,
            hi: 0,
        };
    }
    // Nesting shrinks the budget geometrically, so the generator's own
    // recursion stays shallow; the chains below make the statements deep.
    let inner = budget - budget / 20 - 1;
    let wrap = |e: Built, sql: String, lo: usize, hi: usize| Built {
        sql,
        lo: e.lo + lo,
        hi: e.hi + hi,
    };
    match rng.gen_range(0..10) {
        0 => {
            let e = expression(rng, inner);
            let sql = format!("({})", e.sql);
            wrap(e, sql, 1, 1)
        }
        1 => {
            let e = expression(rng, inner);
            let sql = format!("abs({})", e.sql);
            wrap(e, sql, 1, 2)
        }
        2 => {
            let e = expression(rng, inner);
            let sql = format!("({})::text", e.sql);
            wrap(e, sql, 1, 2)
        }
        3 => {
            let (a, b) = (expression(rng, budget / 3), expression(rng, budget / 3));
            Built {
                sql: format!("CASE WHEN {} THEN {} ELSE 1 END", a.sql, b.sql),
                lo: a.lo.max(b.lo) + 1,
                hi: a.hi.max(b.hi) + 3,
            }
        }
        4 => {
            let e = expression(rng, inner);
            let sql = format!("NOT ({})", e.sql);
            wrap(e, sql, 1, 2)
        }
        5 => {
            let e = expression(rng, inner);
            let sql = format!("(SELECT {})", e.sql);
            wrap(e, sql, 1, 3)
        }
        _ => {
            // A chain of one operator, the shape the parser builds without recursion:
            // each operator is one more level. It continues `e` without parentheses, so
            // when `e` ends in an operator that binds looser, the chain hangs below its
            // last operand instead of above it: at least the deeper of the two, at most
            // both together.
            let ops = [" + ", " || ", " AND ", " OR ", " = ", " < ", " * "];
            let op = ops[rng.gen_range(0..ops.len())];
            let len = rng.gen_range(1..budget.clamp(2, 3000));
            let e = expression(rng, (budget - len) / 2 + 1);
            let mut sql = e.sql.clone();
            for _ in 0..len {
                sql.push_str(op);
                sql.push_str(["1", "id", "val"][rng.gen_range(0..3)]);
            }
            Built {
                sql,
                lo: e.lo.max(len),
                hi: e.hi + len,
            }
        }
    }
}
