//! One case, both sides: PostgreSQL (validity, plan, result names, privileges) and the
//! resolver (its `Analysis`), and the comparisons between them.
//!
//! Checks (a failing check is a case where the resolver's name resolution differs from
//! PostgreSQL's in a way masking or column policy would act on):
//! - `a-privileges`: PostgreSQL must be able to run the statement with SELECT granted on
//!   exactly the columns the resolver reports as used (plus the never-named `pad` column of
//!   every relation it reports). Column privileges are PostgreSQL's own record of what a
//!   statement reads, so a permission error is a read the resolver does not know about;
//!   the report then names the columns PostgreSQL needs.
//! - `a-plan`: every base column a plan expression reads is among the resolver's uses.
//! - `b-lineage`: every base column PostgreSQL's plan computes output i from is in the
//!   resolver's lineage of output i (when the tracer can follow it soundly).
//! - `b-data`: the statement is executed (read-only, on the three marked rows per table):
//!   a text value of the fixture names its own column (`public.customers.email#2`), so a
//!   marker of column X found in output i proves that output i carries data of X; X
//!   must be in the resolver's lineage of output i. Independent of the plan tracer.
//! - `b-width`: the resolver has as many outputs as PostgreSQL's result.
//! - `c-keys`: every base column of a sort or grouping key has a comparing use (not only
//!   Project/WholeRow) in the resolver.
//! - `d-names`: output names equal PostgreSQL's (FigureColname and aliases).
//! - `e-scan-mask`: with every column of every relation the statement reads masked (`null`),
//!   the text the decision runs (masks at the scan, `governance::scan_mask`) must run where
//!   the statement does, and no output may carry any marker: whatever the statement's
//!   spelling, no raw value gets past the derived tables, whatever the resolver made of it.
//! - `panic` / `oracle-error`: the resolver panicked; the probe role hit an error other
//!   than a missing privilege.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;

use interlock::sql::input::DEFAULT_MAX_SQL_BYTES;
use interlock::sql::{Analysis, Catalog, ColumnRef, StatementClass, UseKind};
use serde_json::Value;
use tokio_postgres::{Client, SimpleQueryMessage};

use super::gen::Case;
use super::plan::{self, Plan, Tracer};
use super::schema::{self, PAD, PROBE_ROLE, SEARCH_PATH, TABLES};

static DATABASE: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();

/// The differential database on the harness cluster, created and loaded once per binary.
pub async fn database() -> String {
    DATABASE
        .get_or_init(|| async {
            let db = crate::common::fresh_database("diff").await;
            crate::common::admin(&db)
                .await
                .batch_execute(&schema::ddl())
                .await
                .expect("load the differential schema");
            db
        })
        .await
        .clone()
}

/// A superuser session on the differential database with the source's search path.
pub async fn session(db: &str) -> Client {
    let client = crate::common::admin(db).await;
    client
        .batch_execute(&format!(
            "SET search_path TO {SEARCH_PATH}; SET statement_timeout = '10s'"
        ))
        .await
        .expect("session settings");
    client
}

/// The catalog as the product builds it: its own scanner, its own conversion.
pub async fn catalog(client: &Client) -> Catalog {
    crate::common::catalog_of(client, SEARCH_PATH).await
}

/// What the resolver made of a statement.
pub enum Resolved {
    Accepted(Analysis),
    Refused { code: &'static str, reason: String },
    Panicked(String),
}

/// parse → classify → resolve, exactly as the decision runs them.
pub fn resolve(sql: &str, catalog: &Catalog) -> Resolved {
    let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let parsed = interlock::sql::parse(
            sql,
            0,
            &interlock::sql::parse::ParseLimits {
                max_bytes: DEFAULT_MAX_SQL_BYTES,
                ..Default::default()
            },
        )
        .map_err(|e| (e.code(), e.to_string()))?;
        let classification = interlock::sql::classify(&parsed.statement);
        if let StatementClass::Forbidden(kind) = classification.class {
            return Err(("sql_forbidden_statement", kind.name().to_string()));
        }
        interlock::sql::resolve(classification.target, catalog)
            .map_err(|e| (e.code(), e.to_string()))
    }));
    match run {
        Ok(Ok(analysis)) => Resolved::Accepted(analysis),
        Ok(Err((code, reason))) => Resolved::Refused { code, reason },
        Err(panic) => Resolved::Panicked(
            panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        ),
    }
}

/// PostgreSQL's view of a valid statement.
pub struct PgView {
    pub plan: Plan,
    pub names: Vec<String>,
}

/// PostgreSQL's verdict: the plan and result names, or its error (SQLSTATE, message).
pub async fn postgres(client: &Client, sql: &str) -> Result<PgView, (String, String)> {
    let err = |e: tokio_postgres::Error| {
        let code = e.code().map_or("?????", |c| c.code()).to_string();
        let msg = e
            .as_db_error()
            .map_or_else(|| e.to_string(), |d| d.message().to_string());
        (code, msg)
    };
    let rows = client
        .simple_query(&format!("EXPLAIN (VERBOSE, FORMAT JSON) {sql}"))
        .await
        .map_err(err)?;
    let text = rows
        .iter()
        .find_map(|m| match m {
            SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        })
        .ok_or_else(|| ("XX000".to_string(), "EXPLAIN returned no row".to_string()))?;
    let json: Value = serde_json::from_str(&text)
        .map_err(|e| ("XX000".to_string(), format!("EXPLAIN JSON: {e}")))?;
    let plan = Plan::parse(&json).map_err(|e| ("XX000".to_string(), e))?;
    let statement = client.prepare(sql).await.map_err(err)?;
    let names = statement
        .columns()
        .iter()
        .map(|c| c.name().to_string())
        .collect();
    Ok(PgView { plan, names })
}

type Grants = BTreeMap<(String, String), BTreeSet<String>>;

/// SELECT grants for what the resolver says the statement reads.
fn grants_for(analysis: &Analysis) -> Grants {
    let mut grants: Grants = BTreeMap::new();
    for rel in &analysis.relations_read {
        grants
            .entry((rel.schema.clone(), rel.name.clone()))
            .or_default()
            .insert(PAD.to_string());
    }
    for col in analysis.uses.keys() {
        let entry = grants
            .entry((col.schema.clone(), col.table.clone()))
            .or_default();
        entry.insert(PAD.to_string());
        entry.insert(col.column.clone());
    }
    grants
}

fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

/// Runs EXPLAIN as the probe role holding exactly `grants`; `Err` is PostgreSQL's
/// permission error message, `Ok(Err)` any other error.
async fn run_with_grants(
    client: &Client,
    sql: &str,
    grants: &Grants,
) -> Result<Result<(), String>, String> {
    let mut batch = String::from("BEGIN;\n");
    for ((sch, rel), cols) in grants {
        let cols: Vec<String> = cols.iter().map(|c| quote(c)).collect();
        batch.push_str(&format!(
            "GRANT SELECT ({}) ON {}.{} TO {PROBE_ROLE};\n",
            cols.join(", "),
            quote(sch),
            quote(rel)
        ));
    }
    batch.push_str(&format!(
        "SET LOCAL ROLE {PROBE_ROLE};\nEXPLAIN {sql};\nROLLBACK"
    ));
    match client.batch_execute(&batch).await {
        Ok(()) => Ok(Ok(())),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            let msg = e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_string());
            if e.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) {
                Err(msg)
            } else {
                Ok(Err(msg))
            }
        }
    }
}

/// For a statement that needs more than `grants`: the columns it needs beyond them.
async fn diagnose(client: &Client, sql: &str, mut grants: Grants) -> String {
    let original = grants.clone();
    let mut probed: Vec<(String, String)> = Vec::new();
    for _ in 0..10 {
        let Err(msg) = run_with_grants(client, sql, &grants).await else {
            break;
        };
        let table = msg.rsplit(' ').next().unwrap_or("").to_string();
        let mut grew = false;
        for t in TABLES.iter().filter(|t| t.name == table) {
            let key = (t.schema.to_string(), t.name.to_string());
            let entry = grants.entry(key.clone()).or_default();
            for (c, _) in t.columns {
                grew |= entry.insert(c.to_string());
            }
            if !probed.contains(&key) {
                probed.push(key);
            }
        }
        if !grew {
            return format!("PostgreSQL still refuses with every column granted: {msg}");
        }
    }
    let mut needed = Vec::new();
    for key in &probed {
        let extra: Vec<String> = grants[key]
            .iter()
            .filter(|c| !original.get(key).is_some_and(|o| o.contains(*c)))
            .cloned()
            .collect();
        let mut any = false;
        for col in extra {
            let mut fewer = grants.clone();
            if let Some(e) = fewer.get_mut(key) {
                e.remove(&col);
            }
            if run_with_grants(client, sql, &fewer).await.is_err() {
                needed.push(format!("{}.{}.{col}", key.0, key.1));
                any = true;
            }
        }
        if !any {
            // No single column is needed: the relation itself may be (a read with no
            // column, like count(*)), or another relation of the same name was meant.
            let mut without = grants.clone();
            match original.get(key) {
                Some(cols) => {
                    without.insert(key.clone(), cols.clone());
                }
                None => {
                    without.remove(key);
                }
            }
            if run_with_grants(client, sql, &without).await.is_err() {
                needed.push(format!("{}.{} (the relation, no column)", key.0, key.1));
            }
        }
    }
    format!("PostgreSQL needs SELECT on {}", needed.join(", "))
}

/// Runs a read-only statement with a short time limit; rows as text.
async fn execute(client: &Client, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let batch = format!("BEGIN READ ONLY; SET LOCAL statement_timeout = '300ms'; {sql}; ROLLBACK");
    match client.simple_query(&batch).await {
        Ok(messages) => Ok(messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(r) => {
                    Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
                }
                _ => None,
            })
            .collect()),
        Err(e) => {
            let _ = client.batch_execute("ROLLBACK").await;
            Err(e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_string()))
        }
    }
}

/// The fixture columns whose markers (`schema.table.column#n`) occur in a value.
pub fn markers(value: &str) -> BTreeSet<ColumnRef> {
    let lower = value.to_ascii_lowercase();
    let mut out = BTreeSet::new();
    for t in TABLES {
        for (c, _) in t.columns {
            if lower.contains(&format!("{}.{}.{c}#", t.schema, t.name)) {
                out.insert(ColumnRef::new(t.schema, t.name, c));
            }
        }
    }
    out
}

/// One failed check of one case.
#[derive(Debug, Clone)]
pub struct Failure {
    pub check: &'static str,
    pub detail: String,
}

/// Everything learned about one case.
pub struct CaseResult {
    pub pg: Result<PgView, (String, String)>,
    pub resolved: Resolved,
    pub failures: Vec<Failure>,
    /// Output columns whose lineage the tracer could not follow soundly.
    pub outputs_skipped: usize,
    pub outputs_compared: usize,
    pub keys_skipped: usize,
    pub keys_compared: usize,
    /// Reasons the tracer gave up, for the summary.
    pub skip_reasons: Vec<String>,
    /// Set when the statement was executed for the data check.
    pub executed: bool,
    /// Columns whose data reached an output although the plan tracer did not find them
    /// (a tracer gap, never a failure).
    pub tracer_misses: Vec<String>,
    /// Every base column the plan oracle attributes to the statement (self-check input).
    pub claimed: BTreeSet<ColumnRef>,
}

impl CaseResult {
    pub fn compared(&self) -> bool {
        self.pg.is_ok() && matches!(self.resolved, Resolved::Accepted(_))
    }
}

fn is_comparing(kind: UseKind) -> bool {
    !matches!(kind, UseKind::Project | UseKind::WholeRow)
}

fn show(cols: &BTreeSet<ColumnRef>) -> String {
    let v: Vec<String> = cols.iter().map(ColumnRef::to_string).collect();
    format!("{{{}}}", v.join(", "))
}

/// Runs both sides on one case and compares them.
pub async fn check_case(client: &Client, catalog: &Catalog, case: &Case) -> CaseResult {
    let pg = postgres(client, &case.sql).await;
    let resolved = resolve(&case.sql, catalog);
    let mut result = CaseResult {
        pg,
        resolved,
        failures: Vec::new(),
        outputs_skipped: 0,
        outputs_compared: 0,
        keys_skipped: 0,
        keys_compared: 0,
        skip_reasons: Vec::new(),
        executed: false,
        tracer_misses: Vec::new(),
        claimed: BTreeSet::new(),
    };
    let (Ok(view), Resolved::Accepted(analysis)) = (&result.pg, &result.resolved) else {
        if let Resolved::Panicked(msg) = &result.resolved {
            result.failures.push(Failure {
                check: "panic",
                detail: format!("the resolver panicked: {msg}"),
            });
        }
        return result;
    };
    let mut failures = Vec::new();

    // (a) privileges: PostgreSQL's own record of what the statement reads.
    match run_with_grants(client, &case.sql, &grants_for(analysis)).await {
        Ok(Ok(())) => {}
        Ok(Err(other)) => failures.push(Failure {
            check: "oracle-error",
            detail: format!("EXPLAIN as the probe role failed: {other}"),
        }),
        Err(_) => failures.push(Failure {
            check: "a-privileges",
            detail: diagnose(client, &case.sql, grants_for(analysis)).await,
        }),
    }

    let mut tracer = Tracer::new(&view.plan, &case.facts);

    // (a) plan: every base column a plan expression reads.
    let reads = tracer.reads();
    result.claimed.extend(reads.iter().cloned());
    let missing: BTreeSet<ColumnRef> = reads
        .into_iter()
        .filter(|c| !analysis.uses.contains_key(c))
        .collect();
    if !missing.is_empty() {
        failures.push(Failure {
            check: "a-plan",
            detail: format!(
                "the plan reads {} the resolver does not use",
                show(&missing)
            ),
        });
    }

    // (b) output lineage, and the width it rests on.
    if view.names.len() != analysis.outputs.len() {
        failures.push(Failure {
            check: "b-width",
            detail: format!(
                "PostgreSQL returns {} columns {:?}, the resolver {}",
                view.names.len(),
                view.names,
                analysis.outputs.len()
            ),
        });
    } else {
        let rows = execute(client, &case.sql).await;
        result.executed = rows.is_ok();
        let rows = rows.unwrap_or_default();
        for (i, out) in analysis.outputs.iter().enumerate() {
            let seen: BTreeSet<ColumnRef> = rows
                .iter()
                .filter_map(|r| r.get(i).cloned().flatten())
                .flat_map(|v| markers(&v))
                .collect();
            let unknown: BTreeSet<ColumnRef> =
                seen.difference(&out.lineage.sources).cloned().collect();
            if !unknown.is_empty() {
                failures.push(Failure {
                    check: "b-data",
                    detail: format!(
                        "output {} ({:?}) returned data of {}, the resolver's lineage is {}",
                        i + 1,
                        view.names[i],
                        show(&unknown),
                        show(&out.lineage.sources)
                    ),
                });
            }
            let traced = tracer.output(0, i);
            if let Ok(traced) = &traced {
                for col in seen.difference(traced) {
                    result.tracer_misses.push(format!(
                        "output {} carries {col}: {}",
                        i + 1,
                        case.sql
                    ));
                }
            }
            match traced {
                Ok(traced) => {
                    result.claimed.extend(traced.iter().cloned());
                    result.outputs_compared += 1;
                    let extra: BTreeSet<ColumnRef> =
                        traced.difference(&out.lineage.sources).cloned().collect();
                    if !extra.is_empty() {
                        failures.push(Failure {
                            check: "b-lineage",
                            detail: format!(
                                "output {} ({:?}): PostgreSQL computes it from {}, the resolver's lineage is {} (missing {})",
                                i + 1,
                                view.names[i],
                                show(&traced),
                                show(&out.lineage.sources),
                                show(&extra)
                            ),
                        });
                    }
                }
                Err(why) => {
                    result.outputs_skipped += 1;
                    result.skip_reasons.push(why);
                }
            }
        }
        // (d) names.
        let ours: Vec<&str> = analysis.outputs.iter().map(|o| o.name.as_str()).collect();
        if ours != view.names {
            failures.push(Failure {
                check: "d-names",
                detail: format!(
                    "PostgreSQL names the outputs {:?}, the resolver {:?}",
                    view.names, ours
                ),
            });
        }
    }

    // (c) sort and grouping keys.
    for (node, field, key) in tracer.keys() {
        match tracer.key(node, &key) {
            Ok(cols) => {
                result.claimed.extend(cols.iter().cloned());
                result.keys_compared += 1;
                let uncompared: BTreeSet<ColumnRef> = cols
                    .into_iter()
                    .filter(|c| {
                        !analysis
                            .uses
                            .get(c)
                            .is_some_and(|kinds| kinds.iter().any(|k| is_comparing(*k)))
                    })
                    .collect();
                if !uncompared.is_empty() {
                    failures.push(Failure {
                        check: "c-keys",
                        detail: format!(
                            "{field} {key} (node #{node}) compares {}, which the resolver records only as {}",
                            show(&uncompared),
                            uncompared
                                .iter()
                                .map(|c| format!(
                                    "{c}: {:?}",
                                    analysis.uses.get(c).cloned().unwrap_or_default()
                                ))
                                .collect::<Vec<_>>()
                                .join("; ")
                        ),
                    });
                }
            }
            Err(why) => {
                result.keys_skipped += 1;
                result.skip_reasons.push(why);
            }
        }
    }
    // (e) masks at the scan.
    if result.executed {
        if let Some(failure) = scan_masked_leaks(client, catalog, &case.sql, analysis).await {
            failures.push(failure);
        }
    }
    result.failures = failures;
    result
}

/// Runs `sql` with every column of every relation it reads masked at the scan; a failure
/// when the masked text cannot be made or run, or when an output carries any marker.
async fn scan_masked_leaks(
    client: &Client,
    catalog: &Catalog,
    sql: &str,
    analysis: &Analysis,
) -> Option<Failure> {
    use interlock::governance::{AccessProfile, MaskStrategy, RedactionRule};
    let redactions = analysis
        .scans
        .iter()
        .filter_map(|scan| catalog.relation(&scan.relation.schema, &scan.relation.name))
        .flat_map(|r| {
            r.columns.iter().map(|c| RedactionRule {
                schema: r.schema.clone(),
                table: r.name.clone(),
                column: c.name.clone(),
                strategy: MaskStrategy::Null,
                allow_filter: false,
            })
        })
        .collect();
    let profile = AccessProfile {
        roles: Vec::new(),
        policies: Vec::new(),
        redactions,
    };
    let limits = interlock::sql::parse::ParseLimits {
        max_bytes: DEFAULT_MAX_SQL_BYTES,
        ..Default::default()
    };
    let fail = |detail: String| {
        Some(Failure {
            check: "e-scan-mask",
            detail,
        })
    };
    let text = match interlock::sql::parse(sql, 0, &limits) {
        Ok(parsed) => parsed.sql,
        Err(e) => return fail(format!("does not parse again: {e}")),
    };
    let masked = match interlock::governance::scan_mask::scan_masked(
        &text, analysis, catalog, &profile, 0, None,
    ) {
        Ok(Some(m)) => m.text,
        Ok(None) => return None,
        Err(r) => return fail(format!("no masked text: {}", r.reason)),
    };
    match execute(client, &masked).await {
        // What PostgreSQL cannot see through a derived table (a primary key's functional
        // dependencies; two unaliased relations of one name): refused, with its own code
        // (`mask_grouping`, `mask_alias`), so fail-closed, never a leak.
        Err(e)
            if e.contains("must appear in the GROUP BY clause")
                || e.contains("specified more than once") =>
        {
            None
        }
        Err(e) => fail(format!("the masked text does not run ({e}): {masked}")),
        Ok(rows) => {
            let seen: BTreeSet<ColumnRef> = rows
                .iter()
                .flatten()
                .flatten()
                .flat_map(|v| markers(v))
                .collect();
            if seen.is_empty() {
                None
            } else {
                fail(format!(
                    "data of {} got past the masks: {masked}",
                    show(&seen)
                ))
            }
        }
    }
}

/// Self-check of the plan oracle: every column it attributes to `sql` must be one that
/// PostgreSQL needs SELECT on (revoking just that column makes EXPLAIN fail). Returns the
/// columns that PostgreSQL does not need: each one is an oracle error.
pub async fn unneeded_claims(
    client: &Client,
    sql: &str,
    claimed: &BTreeSet<ColumnRef>,
) -> Vec<ColumnRef> {
    let mut all: Grants = BTreeMap::new();
    for t in TABLES {
        all.insert(
            (t.schema.to_string(), t.name.to_string()),
            t.columns.iter().map(|(c, _)| c.to_string()).collect(),
        );
    }
    let mut wrong = Vec::new();
    for col in claimed {
        let mut grants = all.clone();
        if let Some(cols) = grants.get_mut(&(col.schema.clone(), col.table.clone())) {
            cols.remove(&col.column);
        }
        if let Ok(Ok(())) = run_with_grants(client, sql, &grants).await {
            wrong.push(col.clone());
        }
    }
    wrong
}

/// The resolver's side of a failure report.
pub fn describe_analysis(analysis: &Analysis) -> String {
    let mut out = String::new();
    for (i, o) in analysis.outputs.iter().enumerate() {
        out.push_str(&format!(
            "    output {} {:?}: {}{}\n",
            i + 1,
            o.name,
            show(&o.lineage.sources),
            o.lineage
                .whole_row
                .as_ref()
                .map_or(String::new(), |w| format!(" (whole row {w})"))
        ));
    }
    for (col, kinds) in &analysis.uses {
        out.push_str(&format!("    use {col}: {kinds:?}\n"));
    }
    out
}

/// A full failure report for one case.
pub fn report(case: &Case, result: &CaseResult) -> String {
    let mut out = format!("  SQL: {}\n", case.sql);
    for f in &result.failures {
        out.push_str(&format!("  [{}] {}\n", f.check, f.detail));
    }
    if let Ok(view) = &result.pg {
        out.push_str("  PostgreSQL plan references:\n");
        out.push_str(&plan::describe(&view.plan));
    }
    if let Resolved::Accepted(analysis) = &result.resolved {
        out.push_str("  resolver analysis:\n");
        out.push_str(&describe_analysis(analysis));
    }
    out
}
