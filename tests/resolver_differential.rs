//! Differential test: the resolver's name resolution against PostgreSQL's (issue 12).
//!
//! Thousands of generated SELECT statements over a schema of colliding names (tests/
//! differential/schema.rs) are run through parse → classify → resolve and through
//! PostgreSQL (`EXPLAIN (VERBOSE, FORMAT JSON)`, the prepared statement's result names,
//! and EXPLAIN under column privileges). Any disagreement on what a statement reads, what
//! an output derives from, what a sort or grouping key compares, or what an output is
//! called is a failing case, printed with its SQL, PostgreSQL's plan references and the
//! resolver's analysis. Counts are written to stderr on every run.
//!
//! `INTERLOCK_DIFF_SEED` (decimal or 0x-hex) and `INTERLOCK_DIFF_CASES` override the
//! seed and the number of cases; `INTERLOCK_DIFF_VERBOSE=1` prints every case with both
//! verdicts; `INTERLOCK_DIFF_SQL='SELECT ...'` runs and prints that one statement;
//! `INTERLOCK_DIFF_SELFCHECK=1` also checks the plan oracle itself: every column it
//! attributes to a statement must be one PostgreSQL needs SELECT on. A refusal of valid SQL is fail-closed: counted per
//! construct, never a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod differential;

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use differential::gen::{self, Case, Rng};
use differential::oracle::{self, CaseResult, Resolved};
use interlock::sql::{Analysis, ColumnRef, UseKind};

const DEFAULT_SEED: u64 = 0x1d1f_f012;
const DEFAULT_CASES: usize = 8000;

/// What the default seed must still compare (its counts when these floors were set:
/// 2,260 statements compared, 4,952 outputs, 1,372 sort and group keys, 2,259 statements
/// executed). A resolver that refused more, a tracer that skipped more or an execution check
/// that stopped running would all pass the "no disagreement" check; these fail instead.
const DEFAULT_FLOORS: Floors = Floors {
    compared: 2_150,
    outputs: 4_700,
    keys: 1_300,
    executed: 2_150,
};

/// Shares every run must keep, whatever the seed.
/// The most of the statements PostgreSQL accepts that the resolver may refuse (a usability
/// figure too: valid reads an agent cannot run).
const MAX_REFUSED_VALID: f64 = 0.15;
/// The most outputs, and the most sort/group keys, the tracer may skip as untraceable.
const MAX_SKIPPED: f64 = 0.15;
/// The least of the compared statements whose rows the data check must have executed.
const MIN_EXECUTED: f64 = 0.98;

struct Floors {
    compared: usize,
    outputs: usize,
    keys: usize,
    executed: usize,
}

/// Writes past the test harness's output capture, so CI logs always show the counts.
fn log(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

fn env_number(name: &str) -> Option<u64> {
    let raw = std::env::var(name).ok()?;
    let raw = raw.trim();
    let parsed = match raw.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => raw.parse(),
    };
    Some(parsed.unwrap_or_else(|e| panic!("{name}={raw:?}: {e}")))
}

#[derive(Default)]
struct Counts {
    generated: usize,
    pg_valid: usize,
    accepted: usize,
    compared: usize,
    accepted_invalid: usize,
    fully_traced: usize,
    outputs_compared: usize,
    outputs_skipped: usize,
    keys_compared: usize,
    keys_skipped: usize,
    /// construct tag → (valid in PostgreSQL, refused by the resolver)
    per_tag: BTreeMap<&'static str, (usize, usize)>,
    refusal_codes: BTreeMap<&'static str, usize>,
    invalid_accepted_codes: BTreeMap<String, usize>,
    /// PostgreSQL's reasons for rejecting generated statements, by message shape.
    pg_errors: BTreeMap<String, usize>,
    skip_reasons: BTreeMap<String, usize>,
    failures_by_check: BTreeMap<&'static str, usize>,
    executed: usize,
    tracer_misses: Vec<String>,
    /// check → failing statements, for the shortest examples.
    examples: BTreeMap<&'static str, Vec<String>>,
}

fn skip_class(reason: &str) -> String {
    // Group "position of s.x unknown" style reasons by their shape.
    reason
        .split_whitespace()
        .map(|w| {
            if w.chars()
                .any(|c| c == '.' || c == '$' || c.is_ascii_digit())
            {
                "_"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl Counts {
    /// The share of PostgreSQL-valid statements the resolver refused.
    fn refused_valid_share(&self) -> f64 {
        (self.pg_valid - self.compared) as f64 / self.pg_valid.max(1) as f64
    }

    /// Every floor and ceiling this run misses (floors of the default seed when `floors`).
    fn shortfalls(&self, floors: Option<&Floors>) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(f) = floors {
            for (what, got, floor) in [
                ("statements compared", self.compared, f.compared),
                ("outputs compared", self.outputs_compared, f.outputs),
                ("sort/group keys compared", self.keys_compared, f.keys),
                ("statements executed", self.executed, f.executed),
            ] {
                if got < floor {
                    out.push(format!(
                        "{what}: {got}, below the default seed's floor {floor}"
                    ));
                }
            }
        }
        let share = |part: usize, whole: usize| part as f64 / whole.max(1) as f64;
        if self.refused_valid_share() > MAX_REFUSED_VALID {
            out.push(format!(
                "the resolver refused {:.1}% of the statements PostgreSQL accepts (at most {:.0}%)",
                100.0 * self.refused_valid_share(),
                100.0 * MAX_REFUSED_VALID
            ));
        }
        for (what, skipped, compared) in [
            ("outputs", self.outputs_skipped, self.outputs_compared),
            ("sort/group keys", self.keys_skipped, self.keys_compared),
        ] {
            if share(skipped, skipped + compared) > MAX_SKIPPED {
                out.push(format!(
                    "{skipped} of {} {what} skipped as untraceable (at most {:.0}%)",
                    skipped + compared,
                    100.0 * MAX_SKIPPED
                ));
            }
        }
        if share(self.executed, self.compared) < MIN_EXECUTED {
            out.push(format!(
                "only {} of {} compared statements were executed for the data check",
                self.executed, self.compared
            ));
        }
        out
    }

    fn add(&mut self, case: &Case, r: &CaseResult) {
        self.generated += 1;
        let valid = r.pg.is_ok();
        let accepted = matches!(r.resolved, Resolved::Accepted(_));
        if valid {
            self.pg_valid += 1;
        }
        if accepted {
            self.accepted += 1;
        }
        if valid {
            let refused = !accepted;
            for tag in &case.tags {
                let e = self.per_tag.entry(tag).or_default();
                e.0 += 1;
                e.1 += usize::from(refused);
            }
            if let Resolved::Refused { code, .. } = &r.resolved {
                *self.refusal_codes.entry(code).or_default() += 1;
            }
        }
        if let Err((code, msg)) = &r.pg {
            let shape = format!("{code} {}", skip_class(&msg.replace('"', " ")));
            *self.pg_errors.entry(shape).or_default() += 1;
        }
        if accepted && !valid {
            self.accepted_invalid += 1;
            if let Err((code, _)) = &r.pg {
                *self.invalid_accepted_codes.entry(code.clone()).or_default() += 1;
            }
        }
        if r.compared() {
            self.compared += 1;
            if r.outputs_skipped == 0 && r.keys_skipped == 0 {
                self.fully_traced += 1;
            }
        }
        self.outputs_compared += r.outputs_compared;
        self.outputs_skipped += r.outputs_skipped;
        self.keys_compared += r.keys_compared;
        self.keys_skipped += r.keys_skipped;
        for why in &r.skip_reasons {
            *self.skip_reasons.entry(skip_class(why)).or_default() += 1;
        }
        for f in &r.failures {
            *self.failures_by_check.entry(f.check).or_default() += 1;
            let list = self.examples.entry(f.check).or_default();
            if !list.contains(&case.sql) {
                list.push(case.sql.clone());
            }
        }
        self.executed += usize::from(r.executed);
        self.tracer_misses.extend(r.tracer_misses.iter().cloned());
    }

    fn summary(&self, seed: u64, failing: usize, elapsed: std::time::Duration) -> String {
        let mut s = format!(
            "resolver differential: seed {seed:#x}, {} generated, {} valid in PostgreSQL, \
             {} accepted by the resolver, {} compared ({} fully traced), {} failing, {:.1}s\n",
            self.generated,
            self.pg_valid,
            self.accepted,
            self.compared,
            self.fully_traced,
            failing,
            elapsed.as_secs_f64()
        );
        s.push_str(&format!(
            "  lineage (b): {} outputs compared, {} skipped (not soundly traceable); \
             keys (c): {} compared, {} skipped\n",
            self.outputs_compared, self.outputs_skipped, self.keys_compared, self.keys_skipped
        ));
        s.push_str(&format!(
            "  data (b-data): {} compared statements executed; plan-tracer gaps seen in data: {}\n",
            self.executed,
            self.tracer_misses.len()
        ));
        for miss in self.tracer_misses.iter().take(5) {
            s.push_str(&format!("    tracer gap: {miss}\n"));
        }
        s.push_str(&format!(
            "  accepted by the resolver but invalid in PostgreSQL (never runs): {} {:?}\n",
            self.accepted_invalid, self.invalid_accepted_codes
        ));
        s.push_str(&format!(
            "  failures by check: {:?}\n",
            self.failures_by_check
        ));
        for (check, sqls) in &self.examples {
            let mut shortest: Vec<&String> = sqls.iter().collect();
            shortest.sort_by_key(|q| q.len());
            for q in shortest.iter().take(3) {
                s.push_str(&format!("    shortest {check}: {q}\n"));
            }
        }
        s.push_str(&format!(
            "  fail-closed: {} valid statements refused ({:.1}% of those PostgreSQL accepts), \
             by code {:?}\n",
            self.pg_valid - self.compared,
            100.0 * self.refused_valid_share(),
            self.refusal_codes
        ));
        s.push_str("  fail-closed by construct (valid in PostgreSQL / refused by the resolver):\n");
        for (tag, (valid, refused)) in &self.per_tag {
            s.push_str(&format!(
                "    {tag:<26} {valid:>5} / {refused:>5} ({:.0}%)\n",
                100.0 * *refused as f64 / (*valid).max(1) as f64
            ));
        }
        let mut errors: Vec<(&String, &usize)> = self.pg_errors.iter().collect();
        errors.sort_by(|a, b| b.1.cmp(a.1));
        s.push_str("  why PostgreSQL rejected generated statements (top 8):\n");
        for (why, n) in errors.iter().take(8) {
            s.push_str(&format!("    {n:>5} {why}\n"));
        }
        let mut reasons: Vec<(&String, &usize)> = self.skip_reasons.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1));
        s.push_str("  why traces were skipped (top 8):\n");
        for (why, n) in reasons.iter().take(8) {
            s.push_str(&format!("    {n:>5} {why}\n"));
        }
        s
    }
}

#[tokio::test]
async fn name_resolution_agrees_with_postgresql() {
    let seed = env_number("INTERLOCK_DIFF_SEED").unwrap_or(DEFAULT_SEED);
    let n = env_number("INTERLOCK_DIFF_CASES").map_or(DEFAULT_CASES, |n| n as usize);
    log(&format!(
        "resolver differential: seed {seed:#x}, {n} cases (INTERLOCK_DIFF_SEED / INTERLOCK_DIFF_CASES)\n"
    ));
    let verbose = std::env::var_os("INTERLOCK_DIFF_VERBOSE").is_some();
    let selfcheck = std::env::var_os("INTERLOCK_DIFF_SELFCHECK").is_some();
    let mut oracle_errors: Vec<String> = Vec::new();
    let started = Instant::now();
    let db = oracle::database().await;
    let client = oracle::session(&db).await;
    let catalog = oracle::catalog(&client).await;
    let mut rng = Rng::new(seed);
    let mut counts = Counts::default();
    let mut failing = Vec::new();
    // INTERLOCK_DIFF_SQL: run (and print) that one statement instead of generated ones.
    let given = std::env::var("INTERLOCK_DIFF_SQL").ok();
    let total = if given.is_some() { 1 } else { n };
    for _ in 0..total {
        let case = match &given {
            Some(sql) => Case {
                sql: sql.clone(),
                tags: Default::default(),
                facts: differential::facts::extract(sql).expect("INTERLOCK_DIFF_SQL must parse"),
            },
            None => gen::statement(&mut rng),
        };
        let result = oracle::check_case(&client, &catalog, &case).await;
        counts.add(&case, &result);
        if selfcheck {
            // The generator's bookkeeping of alias lists must match the text.
            let mut ours = case.facts.clone();
            match differential::facts::extract(&case.sql) {
                Some(mut text) => {
                    for f in [&mut ours, &mut text] {
                        f.ranges.sort();
                        f.ctes.sort();
                        f.range_widths.sort();
                        f.cte_widths.sort();
                    }
                    if format!("{ours:?}") != format!("{text:?}") {
                        oracle_errors.push(format!(
                            "generator facts {ours:?} differ from the text's {text:?}: {}",
                            case.sql
                        ));
                    }
                }
                None => oracle_errors.push(format!("sqlparser cannot read: {}", case.sql)),
            }
        }
        if selfcheck && result.compared() {
            for col in oracle::unneeded_claims(&client, &case.sql, &result.claimed).await {
                oracle_errors.push(format!("oracle claims {col}: {}", case.sql));
            }
        }
        if given.is_some() {
            log(&oracle::report(&case, &result));
        }
        if verbose {
            let pg = match &result.pg {
                Ok(_) => "valid".to_string(),
                Err((code, msg)) => format!("{code} {msg}"),
            };
            let ours = match &result.resolved {
                Resolved::Accepted(_) => "accepted".to_string(),
                Resolved::Refused { code, .. } => format!("refused {code}"),
                Resolved::Panicked(_) => "panicked".to_string(),
            };
            let tags: Vec<&str> = case.tags.iter().copied().collect();
            log(&format!(
                "case: {} | pg: {pg} | resolver: {ours} | tags: {} | skipped: {}\n",
                case.sql,
                tags.join(","),
                result.skip_reasons.join("; ")
            ));
        }
        if !result.failures.is_empty() {
            failing.push(oracle::report(&case, &result));
        }
    }
    let summary = counts.summary(seed, failing.len(), started.elapsed());
    for (i, f) in failing.iter().enumerate() {
        log(&format!(
            "failing case {} of {}:\n{f}",
            i + 1,
            failing.len()
        ));
    }
    log(&summary);
    if selfcheck {
        log(&format!(
            "oracle self-check: {} claimed columns PostgreSQL does not need\n{}\n",
            oracle_errors.len(),
            oracle_errors.join("\n")
        ));
        assert!(oracle_errors.is_empty(), "the plan oracle is unsound");
    }
    // The generator must keep producing comparable statements, or the test proves nothing.
    assert!(
        counts.pg_valid * 4 >= counts.generated,
        "only {} of {} generated statements are valid SQL",
        counts.pg_valid,
        counts.generated
    );
    if given.is_none() {
        let floors = (seed == DEFAULT_SEED && n == DEFAULT_CASES).then_some(&DEFAULT_FLOORS);
        let short = counts.shortfalls(floors);
        assert!(
            short.is_empty(),
            "the differential compared too little to show agreement:\n  {}\n{summary}",
            short.join("\n  ")
        );
    }
    assert!(
        failing.is_empty(),
        "{} of {} compared cases disagree with PostgreSQL (each printed above with its SQL, \
         PostgreSQL's plan references and the resolver's analysis)\n{summary}",
        failing.len(),
        counts.compared
    );
}

/// Resolves one statement on the differential schema and runs the full oracle on it;
/// returns the analysis and a report of both sides for assertion messages.
async fn regression(sql: &str) -> (Analysis, Vec<String>, String) {
    let db = oracle::database().await;
    let client = oracle::session(&db).await;
    let catalog = oracle::catalog(&client).await;
    let case = Case {
        sql: sql.to_string(),
        tags: Default::default(),
        facts: differential::facts::extract(sql).expect("the example parses"),
    };
    let result = oracle::check_case(&client, &catalog, &case).await;
    assert!(
        result.pg.is_ok(),
        "PostgreSQL must accept the example: {:?}",
        result.pg.err()
    );
    let disagreements = result
        .failures
        .iter()
        .map(|f| format!("[{}] {}", f.check, f.detail))
        .collect();
    let report = oracle::report(&case, &result);
    match result.resolved {
        Resolved::Accepted(analysis) => (analysis, disagreements, report),
        Resolved::Refused { code, reason } => {
            panic!("the resolver refuses the example ({code}: {reason})")
        }
        Resolved::Panicked(msg) => panic!("the resolver panicked: {msg}"),
    }
}

fn email() -> ColumnRef {
    ColumnRef::new("public", "customers", "email")
}

/// Issue 12, finding 1: an unqualified name that is a column of an outer scope and the
/// alias of an inner range variable is the outer column (PostgreSQL looks for a column in
/// every enclosing scope before it falls back to a whole-row reference).
#[tokio::test]
async fn regression_outer_column_beats_inner_alias() {
    let sql = "SELECT id, (SELECT email FROM public.orders AS email LIMIT 1) AS e \
               FROM public.customers WHERE id = 42";
    let (analysis, disagreements, report) = regression(sql).await;
    let e = &analysis.outputs[1];
    assert!(
        e.lineage.sources.contains(&email()) && e.lineage.whole_row.is_none(),
        "output e must be customers.email, not a whole row of orders:\n{report}"
    );
    assert!(analysis.uses.contains_key(&email()), "{report}");
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

/// Issue 12, finding 2: under WITH RECURSIVE every CTE of the list is visible to every
/// other, so `orders` inside `a` is the later CTE, not the base table.
#[tokio::test]
async fn regression_recursive_with_forward_reference() {
    let sql = "WITH RECURSIVE a AS (SELECT id, status FROM orders), \
               orders AS (SELECT id, email AS status FROM customers) SELECT * FROM a";
    let (analysis, disagreements, report) = regression(sql).await;
    let status = &analysis.outputs[1];
    assert!(
        status.lineage.sources.contains(&email()),
        "output status must derive from customers.email:\n{report}"
    );
    assert!(
        !status
            .lineage
            .sources
            .contains(&ColumnRef::new("public", "orders", "status")),
        "output status does not read the base table orders:\n{report}"
    );
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

/// Issue 12, finding 3: a scalar subquery's output is named after its target, and ORDER
/// BY matches output names before input columns, so this sorts by customers.email.
#[tokio::test]
async fn regression_order_by_scalar_subquery_output_name() {
    let sql = "SELECT id, (SELECT c.email AS country) FROM public.customers c ORDER BY country";
    let (analysis, disagreements, report) = regression(sql).await;
    let kinds = analysis.uses.get(&email()).cloned().unwrap_or_default();
    assert!(
        kinds.contains(&UseKind::Order),
        "customers.email must be recorded as a sort key, got {kinds:?}:\n{report}"
    );
    let names: Vec<&str> = analysis.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(
        names,
        ["id", "country"],
        "PostgreSQL's output names:\n{report}"
    );
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

/// The oracle reads PostgreSQL's printed expressions: references, subplans, parameters;
/// never function names, type names or string contents.
#[test]
fn plan_expressions_are_read_as_references() {
    use differential::plan::{refs, Ref};
    let col = |q: &str, c: &str| Ref::Column(q.to_string(), c.to_string());
    let cases: Vec<(&str, Vec<Ref>)> = vec![
        ("customers.email", vec![col("customers", "email")]),
        ("(lower(c.email) = 'a.b'::text)", vec![col("c", "email")]),
        ("\"*SELECT* 1\".id", vec![col("*SELECT* 1", "id")]),
        ("c.*", vec![Ref::WholeRow("c".to_string())]),
        ("((SubPlan 1))", vec![Ref::SubPlan(1, false)]),
        ("(hashed SubPlan 2)", vec![Ref::SubPlan(2, true)]),
        ("$0", vec![Ref::Param(0)]),
        (
            "CASE WHEN ($1 IS NOT NULL) THEN x.n ELSE NULL::integer END",
            vec![Ref::Param(1), col("x", "n")],
        ),
        ("(o.total)::character varying", vec![col("o", "total")]),
        ("pg_catalog.lower(o.note)", vec![col("o", "note")]),
        ("count(*)", vec![]),
        ("email", vec![Ref::Bare("email".to_string())]),
    ];
    for (text, want) in cases {
        assert_eq!(refs(text), want, "{text}");
    }
}
