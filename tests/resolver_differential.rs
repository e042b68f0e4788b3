//! Name resolution against PostgreSQL itself.
//!
//! A seeded generator writes thousands of queries over a schema built for name
//! collisions (tables named like columns, columns named like tables, aliases
//! that shadow both): nested scopes (scalar subqueries, EXISTS, derived tables,
//! LATERAL), CTEs plain and RECURSIVE with forward and backward references,
//! set operations, ORDER BY / GROUP BY by output name, input name and position,
//! whole-row references. PostgreSQL decides which are valid. For each statement
//! both accept, the resolver's analysis is compared with what PostgreSQL's
//! planner reports (`EXPLAIN (VERBOSE, FORMAT JSON)`: every plan node's output
//! and condition expressions, with column references qualified by range-table
//! alias):
//!
//! (a) every base-table column PostgreSQL reads is among the resolver's uses —
//!     a column PostgreSQL reads that the resolver does not know is a leak;
//! (b) each output column's base columns, traced from the top node through
//!     sub-plans and init-plans, are within the resolver's lineage of that
//!     output (outputs that go through subquery or CTE scans are counted as
//!     not traced);
//! (c) the base columns of every `Sort Key` and `Group Key` are used by the
//!     resolver as keys (order, group, distinct, window, join or set
//!     comparison), not merely projected or filtered.
//!
//! Every disagreement is printed with its SQL and the test fails. The counts
//! are printed so CI logs show them. `INTERLOCK_DIFF_SEED` and
//! `INTERLOCK_DIFF_CASES` override the seed and the number of cases.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use interlock::sql::lineage::UseKind;
use interlock::sql::parse::ParseLimits;
use interlock::sql::{classify, parse, resolve, Catalog, CatalogColumn, CatalogRelation};
use interlock::sql::{RelationKind, StatementClass};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// Tables named like columns and columns named like tables.
const SCHEMA: &[(&str, &[&str])] = &[
    ("a", &["id", "x", "y", "b"]),
    ("b", &["id", "x", "z", "a"]),
    ("c", &["id", "y", "z", "email"]),
    ("email", &["id", "x"]),
];

fn schema_sql() -> String {
    let mut sql = String::from("CREATE SCHEMA d;\n");
    for (table, columns) in SCHEMA {
        let cols: Vec<String> = columns
            .iter()
            .map(|c| {
                if *c == "id" {
                    "id int".to_string()
                } else {
                    format!("{c} text")
                }
            })
            .collect();
        sql.push_str(&format!("CREATE TABLE d.{table} ({});\n", cols.join(", ")));
        sql.push_str(&format!(
            "INSERT INTO d.{table} SELECT g{} FROM generate_series(1, 3) g;\n",
            columns
                .iter()
                .skip(1)
                .map(|c| format!(", '{table}.{c}.' || g"))
                .collect::<String>()
        ));
    }
    sql.push_str("ANALYZE;\n");
    sql
}

fn catalog() -> Catalog {
    Catalog::new(
        SCHEMA
            .iter()
            .map(|(table, columns)| CatalogRelation {
                schema: "d".into(),
                name: table.to_string(),
                kind: RelationKind::Table,
                columns: columns
                    .iter()
                    .map(|c| CatalogColumn {
                        name: c.to_string(),
                        data_type: if *c == "id" { "integer" } else { "text" }.to_string(),
                    })
                    .collect(),
            })
            .collect(),
        vec!["d".into()],
    )
}

// ---------------------------------------------------------------- generator

/// Names for aliases and output columns: every table and column name, so that
/// aliases shadow tables and columns and outputs are named like inputs.
const NAMES: &[&str] = &["id", "x", "y", "z", "email", "a", "b", "c", "q", "t"];
const TABLES: &[&str] = &["a", "b", "c", "email"];

/// A FROM item in scope: its alias (or table name) and its columns.
#[derive(Clone)]
struct Item {
    name: String,
    columns: Vec<String>,
}

struct Gen {
    rng: StdRng,
    /// Query levels, innermost last; each holds the FROM items visible there.
    scopes: Vec<Vec<Item>>,
}

impl Gen {
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.rng.gen_range(0..items.len())]
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.gen_range(0..100) < percent
    }

    /// A column reference: mostly one that exists in some visible scope (bare or
    /// qualified, inner or outer), sometimes any name of the pool — the names
    /// that collide with aliases, tables and outputs.
    fn column(&mut self) -> String {
        let visible: Vec<(usize, Item)> = self
            .scopes
            .iter()
            .enumerate()
            .flat_map(|(depth, items)| items.iter().cloned().map(move |i| (depth, i)))
            .collect();
        if visible.is_empty() || self.chance(20) {
            return match self.rng.gen_range(0..6) {
                0..=3 => self.pick(NAMES).to_string(),
                4 => format!("{}.{}", self.pick(NAMES), self.pick(NAMES)),
                _ => self.pick(NAMES).to_string(),
            };
        }
        let (_, item) = &visible[self.rng.gen_range(0..visible.len())];
        if item.columns.is_empty() {
            return item.name.clone();
        }
        let column = item.columns[self.rng.gen_range(0..item.columns.len())].clone();
        match self.rng.gen_range(0..10) {
            0..=5 => column,
            6..=8 => format!("{}.{column}", item.name),
            // A whole-row reference, or a field of one.
            _ if self.chance(50) => item.name.clone(),
            _ => format!("({}).{column}", item.name),
        }
    }

    fn expr(&mut self, depth: u32) -> String {
        if depth == 0 {
            return self.column();
        }
        match self.rng.gen_range(0..12) {
            0..=4 => self.column(),
            5 => format!("({} || 'k')", self.expr(depth - 1)),
            6 => format!("{}::text", self.expr(depth - 1)),
            7 => format!(
                "CASE WHEN {} IS NULL THEN NULL ELSE {} END",
                self.column(),
                self.expr(depth - 1)
            ),
            8 => format!("(SELECT {} AS {})", self.expr(depth - 1), self.pick(NAMES)),
            9 | 10 => {
                // A scalar subquery: a new level over its own FROM item.
                let (from, item) = self.gen_from_item(depth - 1);
                self.scopes.push(vec![item]);
                let e = self.expr(depth - 1);
                self.scopes.pop();
                format!("(SELECT {e} FROM {from} LIMIT 1)")
            }
            _ => format!("coalesce({}, 'n')", self.expr(depth - 1)),
        }
    }

    /// A FROM item and what it brings into scope.
    fn gen_from_item(&mut self, depth: u32) -> (String, Item) {
        let alias = if self.chance(70) {
            Some(self.pick(NAMES).to_string())
        } else {
            None
        };
        if depth > 0 && self.chance(25) {
            // A derived table: its own level, outputs named explicitly.
            let (inner_from, inner_item) = self.gen_from_item(depth - 1);
            self.scopes.push(vec![inner_item]);
            let n = self.rng.gen_range(1..=2);
            let mut items = Vec::new();
            let mut names = Vec::new();
            for _ in 0..n {
                let name = self.pick(NAMES).to_string();
                items.push(format!("{} AS {name}", self.expr(depth - 1)));
                names.push(name);
            }
            self.scopes.pop();
            let name = alias.unwrap_or_else(|| "q".to_string());
            let sql = format!("(SELECT {} FROM {inner_from}) AS {name}", items.join(", "));
            return (
                sql,
                Item {
                    name,
                    columns: names,
                },
            );
        }
        let table = self.pick(TABLES);
        let columns: Vec<String> = table_columns(table).iter().map(|c| c.to_string()).collect();
        let qualified = if self.chance(30) { "d." } else { "" };
        match alias {
            Some(alias) => (
                format!("{qualified}{table} AS {alias}"),
                Item {
                    name: alias,
                    columns,
                },
            ),
            None => (
                format!("{qualified}{table}"),
                Item {
                    name: table.to_string(),
                    columns,
                },
            ),
        }
    }

    fn select_list(&mut self, depth: u32) -> (String, Vec<String>) {
        let n = self.rng.gen_range(1..=2);
        let mut items = Vec::new();
        let mut names = Vec::new();
        for _ in 0..n {
            let e = self.expr(depth);
            if self.chance(50) {
                let name = self.pick(NAMES).to_string();
                items.push(format!("{e} AS {name}"));
                names.push(name);
            } else {
                names.push(e.rsplit('.').next().unwrap_or(&e).to_string());
                items.push(e);
            }
        }
        (items.join(", "), names)
    }

    /// One SELECT at a new level; returns it and its output names.
    fn select(&mut self, depth: u32) -> (String, Vec<String>) {
        self.scopes.push(Vec::new());
        let (from, item) = self.gen_from_item(depth);
        let mut from_sql = from;
        if let Some(level) = self.scopes.last_mut() {
            level.push(item);
        }
        if self.chance(20) {
            let (right, right_item) = self.gen_from_item(0);
            if let Some(level) = self.scopes.last_mut() {
                level.push(right_item);
            }
            from_sql = format!(
                "{from_sql} JOIN {right} ON {} = {}",
                self.column(),
                self.column()
            );
        } else if self.chance(20) {
            let (inner_from, inner_item) = self.gen_from_item(0);
            self.scopes.push(vec![inner_item]);
            let e = self.expr(depth.saturating_sub(1));
            self.scopes.pop();
            let out = self.pick(NAMES).to_string();
            let name = self.pick(NAMES).to_string();
            from_sql = format!(
                "{from_sql}, LATERAL (SELECT {e} AS {out} FROM {inner_from} LIMIT 1) AS {name}"
            );
            if let Some(level) = self.scopes.last_mut() {
                level.push(Item {
                    name,
                    columns: vec![out],
                });
            }
        }
        let (list, names) = self.select_list(depth);
        let mut sql = format!("SELECT {list} FROM {from_sql}");
        match self.rng.gen_range(0..10) {
            0 | 1 => sql.push_str(&format!(" WHERE {} IS NOT NULL", self.expr(depth))),
            2 => {
                let (inner_from, inner_item) = self.gen_from_item(0);
                self.scopes.push(vec![inner_item]);
                let (l, r) = (self.column(), self.column());
                self.scopes.pop();
                sql.push_str(&format!(
                    " WHERE EXISTS (SELECT 1 FROM {inner_from} WHERE {l} = {r})"
                ));
            }
            _ => {}
        }
        if self.chance(10) {
            sql.push_str(&format!(" GROUP BY {}", self.pick(NAMES)));
        }
        if self.chance(35) {
            let key = match self.rng.gen_range(0..4) {
                0 => self.rng.gen_range(1..=names.len()).to_string(),
                1 => names[self.rng.gen_range(0..names.len())].clone(),
                2 => self.column(),
                _ => self.pick(NAMES).to_string(),
            };
            sql.push_str(&format!(" ORDER BY {key}"));
        }
        self.scopes.pop();
        (sql, names)
    }

    fn query(&mut self) -> String {
        self.scopes.clear();
        let mut sql = String::new();
        let mut ctes: Vec<Item> = Vec::new();
        if self.chance(35) {
            let recursive = self.chance(50);
            let n = self.rng.gen_range(1..=2);
            let mut defs = Vec::new();
            for _ in 0..n {
                let name = self.pick(NAMES).to_string();
                let (body, names) = self.select(1);
                defs.push(format!("{name} AS ({body})"));
                ctes.push(Item {
                    name,
                    columns: names,
                });
            }
            sql.push_str(&format!(
                "WITH {}{} ",
                if recursive { "RECURSIVE " } else { "" },
                defs.join(", ")
            ));
        }
        let (body, names) = self.select(2);
        sql.push_str(&body);
        if !sql.contains(" ORDER BY ") && self.chance(15) {
            sql.push_str(if self.chance(50) {
                " UNION "
            } else {
                " UNION ALL "
            });
            let (other, _) = self.select(1);
            sql.push_str(&other);
            if self.chance(40) {
                sql.push_str(&format!(" ORDER BY {}", names[0]));
            }
        }
        // CTE names are referenced by the FROM items' table names (a, b, c, email)
        // only when a CTE happens to be named like a table: that is the collision.
        let _ = ctes;
        sql
    }
}

// ------------------------------------------------------------------- oracle

/// A plan node's range-table alias and what it scans.
#[derive(Debug, Clone)]
enum Scan {
    Table(String),
    Other,
}

#[derive(Default)]
struct Plan {
    aliases: BTreeMap<String, Scan>,
    /// Every (field, expression) of every node.
    exprs: Vec<(String, String)>,
    /// Sub-plans and init-plans by name: their top node's outputs.
    subplans: BTreeMap<String, Vec<String>>,
    top_outputs: Vec<String>,
}

fn walk(node: &Value, plan: &mut Plan) {
    let Some(obj) = node.as_object() else { return };
    if let (Some(alias), Some(rel)) = (
        obj.get("Alias").and_then(Value::as_str),
        obj.get("Relation Name").and_then(Value::as_str),
    ) {
        plan.aliases
            .insert(alias.to_string(), Scan::Table(rel.to_string()));
    } else if let Some(alias) = obj.get("Alias").and_then(Value::as_str) {
        plan.aliases.insert(alias.to_string(), Scan::Other);
    }
    if let Some(name) = obj.get("Subplan Name").and_then(Value::as_str) {
        let outputs = strings(obj.get("Output"));
        // "InitPlan 1 (returns $0)" / "SubPlan 2" / "CTE x".
        plan.subplans.insert(name.to_string(), outputs);
    }
    for (key, value) in obj {
        match value {
            Value::String(s) if is_expr_field(key) => plan.exprs.push((key.clone(), s.clone())),
            Value::Array(items) if is_expr_field(key) => {
                for s in items.iter().filter_map(Value::as_str) {
                    plan.exprs.push((key.clone(), s.to_string()));
                }
            }
            _ => {}
        }
    }
    if let Some(children) = obj.get("Plans").and_then(Value::as_array) {
        for child in children {
            walk(child, plan);
        }
    }
}

fn is_expr_field(key: &str) -> bool {
    key == "Output" || key.ends_with("Cond") || key.ends_with("Filter") || key.ends_with("Key")
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// `alias.column` references in a deparsed expression (string literals skipped).
fn refs(expr: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let chars: Vec<char> = expr.chars().collect();
    let mut i = 0;
    let ident = |i: &mut usize| -> Option<String> {
        if *i < chars.len() && chars[*i] == '"' {
            let mut s = String::new();
            *i += 1;
            while *i < chars.len() {
                if chars[*i] == '"' {
                    if chars.get(*i + 1) == Some(&'"') {
                        s.push('"');
                        *i += 2;
                        continue;
                    }
                    *i += 1;
                    return Some(s);
                }
                s.push(chars[*i]);
                *i += 1;
            }
            return None;
        }
        let start = *i;
        while *i < chars.len()
            && (chars[*i].is_alphanumeric() || chars[*i] == '_' || chars[*i] == '$')
        {
            *i += 1;
        }
        (*i > start).then(|| chars[start..*i].iter().collect())
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            i += 1;
            while i < chars.len() && !(chars[i] == '\'' && chars.get(i + 1) != Some(&'\'')) {
                i += if chars[i] == '\'' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        if c == '"' || c.is_alphabetic() || c == '_' {
            let before = i;
            let Some(first) = ident(&mut i) else { break };
            let preceded_by_dot = before > 0 && chars[before - 1] == '.';
            if !preceded_by_dot && i < chars.len() && chars[i] == '.' {
                i += 1;
                if chars.get(i) == Some(&'*') {
                    out.push((first, "*".to_string()));
                    i += 1;
                } else if let Some(second) = ident(&mut i) {
                    out.push((first, second));
                }
            }
            continue;
        }
        i += 1;
    }
    out
}

fn table_columns(table: &str) -> &'static [&'static str] {
    SCHEMA
        .iter()
        .find(|(t, _)| *t == table)
        .map(|(_, c)| *c)
        .unwrap_or(&[])
}

/// Base columns (table, column) named by `expr`; `None` when a reference goes
/// through a scan that is not a table (subquery, CTE, function, values).
fn base_refs(expr: &str, plan: &Plan, depth: u32) -> Option<BTreeSet<(String, String)>> {
    let mut out = BTreeSet::new();
    for (alias, column) in refs(expr) {
        match plan.aliases.get(&alias) {
            Some(Scan::Table(table)) => {
                if column == "*" {
                    for c in table_columns(table) {
                        out.insert((table.clone(), c.to_string()));
                    }
                } else if table_columns(table).contains(&column.as_str()) {
                    out.insert((table.clone(), column));
                }
            }
            Some(Scan::Other) => return None,
            None => {}
        }
    }
    // Sub-plans: "(SubPlan 1)"; init-plans: "$0" for "InitPlan 1 (returns $0)".
    if depth < 8 {
        for (name, outputs) in &plan.subplans {
            let mentioned = if let Some(rest) = name.strip_prefix("InitPlan") {
                rest.split("returns ")
                    .nth(1)
                    .map(|r| r.trim_end_matches(')'))
                    .is_some_and(|params| params.split(',').any(|p| mentions_param(expr, p.trim())))
            } else {
                expr.contains(&format!("({name})"))
            };
            if mentioned {
                let first = outputs.first()?;
                out.extend(base_refs(first, plan, depth + 1)?);
            }
        }
    }
    Some(out)
}

fn mentions_param(expr: &str, param: &str) -> bool {
    expr.match_indices(param).any(|(i, _)| {
        !expr[i + param.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

// --------------------------------------------------------------------- run

#[derive(Default, Debug)]
struct Counts {
    generated: usize,
    pg_valid: usize,
    resolver_accepted: usize,
    resolver_refused_valid: usize,
    accepted_invalid: usize,
    outputs_compared: usize,
    outputs_untraced: usize,
}

#[tokio::test]
async fn resolution_agrees_with_postgresql() {
    let seed: u64 = std::env::var("INTERLOCK_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261201);
    let cases: usize = std::env::var("INTERLOCK_DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6000);
    let db = common::fresh_database("differential").await;
    let client = common::admin(&db).await;
    client.batch_execute(&schema_sql()).await.expect("schema");
    client
        .batch_execute("SET search_path = d")
        .await
        .expect("search_path");
    let catalog = catalog();
    let mut gen = Gen {
        rng: StdRng::seed_from_u64(seed),
        scopes: Vec::new(),
    };
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    let limits = ParseLimits::default();
    for _ in 0..cases {
        let sql = gen.query();
        counts.generated += 1;
        let analysis = parse(&sql, 0, &limits).ok().and_then(|parsed| {
            let classified = classify(&parsed.statement);
            if classified.class != StatementClass::Read {
                return None;
            }
            resolve(classified.target, &catalog).ok()
        });
        let explained = client
            .query_one(&format!("EXPLAIN (VERBOSE, FORMAT JSON) {sql}"), &[])
            .await;
        let plan_json: Value = match explained {
            Ok(row) => row.get(0),
            Err(_) => {
                if analysis.is_some() {
                    counts.accepted_invalid += 1;
                }
                continue;
            }
        };
        counts.pg_valid += 1;
        let Some(analysis) = analysis else {
            counts.resolver_refused_valid += 1;
            continue;
        };
        counts.resolver_accepted += 1;
        let mut plan = Plan::default();
        let top = &plan_json[0]["Plan"];
        walk(top, &mut plan);
        plan.top_outputs = strings(top.get("Output"));
        let uses: BTreeMap<(String, String), BTreeSet<UseKind>> = analysis
            .uses
            .iter()
            .map(|(c, kinds)| ((c.table.clone(), c.column.clone()), kinds.clone()))
            .collect();
        let mut problems = Vec::new();
        // (a) every base column PostgreSQL reads is a use the resolver knows.
        let mut read = BTreeSet::new();
        // Scan nodes may emit their whole physical row, so intermediate `Output`
        // lists over-state what is read; what is used shows in the top node's and
        // the sub-plans' outputs and in every condition and key.
        let used: Vec<&String> = plan
            .exprs
            .iter()
            .filter(|(field, _)| field != "Output")
            .map(|(_, e)| e)
            .chain(plan.top_outputs.iter())
            .chain(plan.subplans.values().flatten())
            .collect();
        for expr in used {
            for (alias, column) in refs(expr) {
                if let Some(Scan::Table(table)) = plan.aliases.get(&alias) {
                    let columns: Vec<String> = if column == "*" {
                        table_columns(table).iter().map(|c| c.to_string()).collect()
                    } else if table_columns(table).contains(&column.as_str()) {
                        vec![column]
                    } else {
                        vec![]
                    };
                    for c in columns {
                        read.insert((table.clone(), c));
                    }
                }
            }
        }
        for col in &read {
            if !uses.contains_key(col) {
                problems.push(format!(
                    "(a) PostgreSQL reads {}.{} but the resolver never uses it",
                    col.0, col.1
                ));
            }
        }
        // (b) each output's base columns are within its lineage.
        for (i, output) in analysis.outputs.iter().enumerate() {
            let Some(pg_expr) = plan.top_outputs.get(i) else {
                break;
            };
            match base_refs(pg_expr, &plan, 0) {
                None => counts.outputs_untraced += 1,
                Some(pg_cols) => {
                    counts.outputs_compared += 1;
                    let mine: BTreeSet<(String, String)> = output
                        .lineage
                        .sources
                        .iter()
                        .map(|c| (c.table.clone(), c.column.clone()))
                        .collect();
                    for col in pg_cols.difference(&mine) {
                        problems.push(format!(
                            "(b) output {} ({}) is {pg_expr} in PostgreSQL, which reads {}.{}; resolver lineage {mine:?}",
                            i + 1,
                            output.name,
                            col.0,
                            col.1
                        ));
                    }
                }
            }
        }
        // (c) sort and group keys are keys for the resolver too. A sort may be on a
        // column the query only filters by: one that feeds a merge join (EXISTS and
        // IN become joins), or one the planner knows equal to the ORDER BY column
        // from an equality condition. For condition columns a filter use is enough.
        let join_cols: BTreeSet<(String, String)> = plan
            .exprs
            .iter()
            .filter(|(field, _)| field.ends_with("Cond") || field.ends_with("Filter"))
            .filter_map(|(_, e)| base_refs(e, &plan, 0))
            .flatten()
            .collect();
        for (field, expr) in &plan.exprs {
            if field != "Sort Key" && field != "Group Key" {
                continue;
            }
            let Some(cols) = base_refs(expr, &plan, 0) else {
                continue;
            };
            for col in cols {
                let keyed = uses.get(&col).is_some_and(|kinds| {
                    kinds.iter().any(|k| match k {
                        UseKind::Project => false,
                        UseKind::Filter => join_cols.contains(&col),
                        _ => true,
                    })
                });
                if !keyed {
                    problems.push(format!(
                        "(c) {field} {expr} uses {}.{} as a key; resolver uses {:?}",
                        col.0,
                        col.1,
                        uses.get(&col)
                    ));
                }
            }
        }
        if !problems.is_empty() {
            failures.push(format!("{sql}\n    {}", problems.join("\n    ")));
        }
    }
    println!(
        "resolver_differential: seed {seed}: {counts:?}, {} disagreements",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} statements resolve differently from PostgreSQL (seed {seed}):\n{}",
        failures.len(),
        counts.resolver_accepted,
        failures
            .iter()
            .take(40)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The generator must exercise the comparison, not only produce invalid SQL.
    assert!(counts.resolver_accepted > cases / 10, "{counts:?}");
    assert!(counts.outputs_compared > cases / 10, "{counts:?}");
}
