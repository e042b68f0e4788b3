//! The facts of one call as the values a condition reads ([`super::schema`] declares
//! them). The pipeline knows the caller and the request ([`CallFacts`]); the SQL decision
//! adds the statement ([`StatementFacts`]) once it has understood it.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::objects::Key;
use cel::Value;
use chrono::{DateTime, Datelike, Timelike, Utc};
use serde::{Deserialize, Serialize};

use super::schema::{MAX_CLAIM_LIST, MAX_COLUMNS, MAX_TABLES};

/// What the pipeline knows of a call before its statement is decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallFacts {
    pub identity: String,
    pub kind: String,
    /// `api_key` or `oauth`.
    pub credential: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub claims: serde_json::Map<String, serde_json::Value>,
    pub tool: String,
    pub source: String,
    pub adapter: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub dialect: String,
    pub time: DateTime<Utc>,
    /// The IANA zone local time facts are read in.
    pub zone: String,
    /// The rows the caller asked for, when it asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rows: Option<u64>,
    /// The source's own row cap.
    pub source_max_rows: u64,
}

impl CallFacts {
    /// Facts of a call nobody described (unit tests and tools that decide SQL without a
    /// caller): an unnamed agent calling `interlock_query` now, in UTC.
    pub fn anonymous(source: &str) -> Self {
        CallFacts {
            identity: String::new(),
            kind: "agent".into(),
            credential: "api_key".into(),
            groups: Vec::new(),
            claims: serde_json::Map::new(),
            tool: "interlock_query".into(),
            source: source.into(),
            adapter: "mcp".into(),
            dialect: String::new(),
            time: Utc::now(),
            zone: "UTC".into(),
            max_rows: None,
            source_max_rows: u64::MAX,
        }
    }
}

/// What the SQL decision knows of a statement.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StatementFacts {
    pub class: &'static str,
    pub explain: bool,
    pub analyze: bool,
    pub tables_read: Vec<String>,
    pub columns_read: Vec<String>,
    pub columns_returned: Vec<String>,
    pub tables_written: Vec<String>,
    pub columns_written: Vec<String>,
    pub deletes_rows: bool,
    pub functions: Vec<String>,
    pub reads_clock: bool,
    pub row_cap: u64,
}

/// What the planner estimated of a read, for conditions over `plan.…` (evaluated in the
/// cost step, once the source has planned it). A planned read's audit record keeps them, so
/// a replay can judge cost rules and `plan.…` conditions again.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PlanFacts {
    pub cost: u64,
    pub rows: u64,
    pub bytes: u64,
    pub result_rows: u64,
    pub seq_scans: Vec<String>,
}

/// The three fact objects as CEL values, or why this call's facts exceed the schema's
/// bounds (every condition then fails to evaluate, which fails closed).
#[derive(Debug, Clone)]
pub struct FactValues {
    /// The roots in the evaluator's own representation, converted once per call (not once
    /// per rule: the conversion copies every map and list, and costs more than most
    /// conditions).
    pub(super) bound: Result<Arc<Bound>, String>,
    #[cfg(test)]
    pub(super) roots: Result<Vec<Value>, String>,
}

/// `caller`, `request` and `statement` (and, once the source planned the read, `plan`),
/// ready for evaluation.
#[derive(Debug)]
pub struct Bound {
    vals: [Box<dyn Val>; 3],
    plan: Option<Box<dyn Val>>,
}

impl VariableResolver for Bound {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        let i = match variable {
            "caller" => 0,
            "request" => 1,
            "statement" => 2,
            "plan" => return self.plan.as_deref().map(CowVal::Borrowed),
            _ => return None,
        };
        Some(CowVal::Borrowed(self.vals[i].as_ref()))
    }
}

fn bind(roots: &Result<[Value; 3], String>, plan: Option<Value>) -> Result<Arc<Bound>, String> {
    let [caller, request, statement] = roots.as_ref().map_err(Clone::clone)?;
    let convert = |v: &Value| {
        Box::<dyn Val>::try_from(v.clone()).map_err(|e| format!("the facts of the call: {e:?}"))
    };
    Ok(Arc::new(Bound {
        vals: [convert(caller)?, convert(request)?, convert(statement)?],
        plan: plan.as_ref().map(convert).transpose()?,
    }))
}

fn map(entries: Vec<(&'static str, Value)>) -> Value {
    let map: HashMap<Key, Value> = entries
        .into_iter()
        .map(|(k, v)| (Key::from(k.to_string()), v))
        .collect();
    Value::from(map)
}

fn strings(what: &str, items: &[String], max: usize) -> Result<Value, String> {
    if items.len() > max {
        return Err(format!(
            "{what} holds {} entries, more than the {max} a condition may read",
            items.len()
        ));
    }
    Ok(Value::List(Arc::new(
        items.iter().map(|s| Value::from(s.as_str())).collect(),
    )))
}

/// Every function called under both names a rule may write it by: its bare name (`now`)
/// and its catalog-qualified name (`pg_catalog.now`); every callable function is a
/// `pg_catalog` one.
fn functions(names: &[String]) -> Result<Value, String> {
    let both: Vec<String> = names
        .iter()
        .flat_map(|name| {
            let qualified = format!("{}.{name}", crate::sql::catalog::PG_CATALOG);
            [name.clone(), qualified]
        })
        .collect();
    strings("statement.functions", &both, MAX_COLUMNS)
}

/// The catalogue family (`docs/functions.md`) of every function called, each once.
fn function_families(names: &[String]) -> Result<Value, String> {
    let families: std::collections::BTreeSet<String> = names
        .iter()
        .filter_map(|name| crate::sql::functions::entry(name))
        .map(|e| e.family.code().to_string())
        .collect();
    let families: Vec<String> = families.into_iter().collect();
    strings("statement.function_families", &families, MAX_COLUMNS)
}

fn int(n: u64) -> Value {
    Value::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// Every list in a claim value holds at most [`MAX_CLAIM_LIST`] entries.
fn claim_within_bounds(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Array(a) => {
            a.len() <= MAX_CLAIM_LIST && a.iter().all(claim_within_bounds)
        }
        serde_json::Value::Object(o) => {
            o.len() <= MAX_CLAIM_LIST && o.values().all(claim_within_bounds)
        }
        _ => true,
    }
}

impl FactValues {
    /// No facts: every condition fails to evaluate, so enforced conditional rules apply
    /// (the decision of a statement without a described call, e.g. an approved write's
    /// re-check when its requester's facts were not kept).
    pub fn missing(why: &str) -> Self {
        FactValues {
            bound: Err(why.to_string()),
            #[cfg(test)]
            roots: Err(why.to_string()),
        }
    }

    pub fn new(call: &CallFacts, roles: &[String], statement: &StatementFacts) -> Self {
        let roots = Self::build(call, roles, statement);
        FactValues {
            bound: bind(&roots, None),
            #[cfg(test)]
            roots: roots.map(|r| r.to_vec()),
        }
    }

    /// As [`FactValues::new`], with the planner's estimate as `plan`.
    pub fn planned(
        call: &CallFacts,
        roles: &[String],
        statement: &StatementFacts,
        plan: &PlanFacts,
    ) -> Self {
        let roots = Self::build(call, roles, statement);
        let plan = strings("plan.seq_scans", &plan.seq_scans, MAX_TABLES).map(|scans| {
            map(vec![
                ("cost", int(plan.cost)),
                ("rows", int(plan.rows)),
                ("bytes", int(plan.bytes)),
                ("result_rows", int(plan.result_rows)),
                ("seq_scans", scans),
            ])
        });
        let bound = match &plan {
            Ok(plan) => bind(&roots, Some(plan.clone())),
            Err(why) => Err(why.clone()),
        };
        FactValues {
            bound,
            #[cfg(test)]
            roots: roots.and_then(|r| {
                let mut all = r.to_vec();
                all.push(plan?);
                Ok(all)
            }),
        }
    }

    fn build(call: &CallFacts, roles: &[String], s: &StatementFacts) -> Result<[Value; 3], String> {
        let claims = serde_json::Value::Object(call.claims.clone());
        if !claim_within_bounds(&claims) {
            return Err(format!(
                "a token claim holds a list longer than {MAX_CLAIM_LIST} entries"
            ));
        }
        let claims = cel::to_value(&claims).map_err(|e| format!("the token's claims: {e}"))?;
        let caller = map(vec![
            ("identity", Value::from(call.identity.as_str())),
            ("kind", Value::from(call.kind.as_str())),
            ("credential", Value::from(call.credential.as_str())),
            (
                "groups",
                strings("caller.groups", &call.groups, MAX_CLAIM_LIST)?,
            ),
            ("claims", claims),
            ("roles", strings("caller.roles", roles, MAX_TABLES)?),
        ]);
        let zone: chrono_tz::Tz = call
            .zone
            .parse()
            .map_err(|_| format!("the time zone {:?} is not an IANA zone", call.zone))?;
        let local = call.time.with_timezone(&zone);
        let request = map(vec![
            ("tool", Value::from(call.tool.as_str())),
            ("source", Value::from(call.source.as_str())),
            ("adapter", Value::from(call.adapter.as_str())),
            ("dialect", Value::from(call.dialect.as_str())),
            ("time", Value::Timestamp(call.time.fixed_offset())),
            ("zone", Value::from(call.zone.as_str())),
            ("hour", Value::Int(i64::from(local.hour()))),
            ("minute", Value::Int(i64::from(local.minute()))),
            (
                "weekday",
                Value::Int(i64::from(local.weekday().num_days_from_sunday())),
            ),
            ("date", Value::from(local.format("%Y-%m-%d").to_string())),
            ("max_rows", int(call.max_rows.unwrap_or(0))),
        ]);
        let statement = map(vec![
            ("class", Value::from(s.class)),
            ("explain", Value::Bool(s.explain)),
            ("analyze", Value::Bool(s.analyze)),
            (
                "tables_read",
                strings("statement.tables_read", &s.tables_read, MAX_TABLES)?,
            ),
            (
                "columns_read",
                strings("statement.columns_read", &s.columns_read, MAX_COLUMNS)?,
            ),
            (
                "columns_returned",
                strings(
                    "statement.columns_returned",
                    &s.columns_returned,
                    MAX_COLUMNS,
                )?,
            ),
            (
                "tables_written",
                strings("statement.tables_written", &s.tables_written, MAX_TABLES)?,
            ),
            (
                "columns_written",
                strings("statement.columns_written", &s.columns_written, MAX_COLUMNS)?,
            ),
            ("deletes_rows", Value::Bool(s.deletes_rows)),
            ("functions", functions(&s.functions)?),
            ("function_families", function_families(&s.functions)?),
            ("reads_clock", Value::Bool(s.reads_clock)),
            ("row_cap", int(s.row_cap)),
        ]);
        Ok([caller, request, statement])
    }
}
