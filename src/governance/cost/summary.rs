//! What an agent is shown of a plan over a limit: the estimate against the limits, the most
//! expensive steps, the indexes of the relations scanned and the age of their statistics,
//! and one sentence it can act on.
//!
//! Only relations the caller's statement names and the decision allowed are ever named
//! (`visible`). A step over any other relation — a view's underlying table, a table a
//! row-level security policy reads — is counted, never described; and where the plan holds
//! such a step, no step's expressions (filters, sort keys) are shown either, since they may
//! name that relation's columns (a sort over a view sorts by its table's column). A filter is
//! shown only on a visible relation known to have no row-level security (the policy's own
//! predicate would appear in it otherwise).

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::limits::CostLimit;
use super::plan::{PlanEstimate, PlanNode};

/// The most steps listed.
const MAX_STEPS: usize = 5;
/// The most indexes listed per relation.
const MAX_INDEXES: usize = 10;

/// What the source's catalog says of one relation the plan scans.
#[derive(Debug, Clone, PartialEq)]
pub struct RelationFacts {
    pub schema: String,
    pub name: String,
    /// `pg_class.reltuples`: the row count the planner works from (-1: never analyzed).
    pub estimated_rows: f64,
    pub row_security: bool,
    /// The latest of `last_analyze` and `last_autoanalyze`.
    pub analyzed_at: Option<DateTime<Utc>>,
    /// `pg_get_indexdef` of each index.
    pub indexes: Vec<String>,
}

/// A plan over its limits, as the caller sees it.
pub struct Summary<'a> {
    pub estimate: &'a PlanEstimate,
    pub exceeded: &'a [CostLimit],
    /// The relations the decision allowed the caller to read, `(schema, name)`.
    pub visible: &'a [(String, String)],
    pub relations: &'a [RelationFacts],
    pub now: DateTime<Utc>,
}

/// The visible relations the plan scans, in plan order, each once (what to ask the catalog).
pub fn scanned(estimate: &PlanEstimate, visible: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for r in estimate.nodes.iter().filter_map(|n| n.relation.as_ref()) {
        if visible.contains(r) && !out.contains(r) {
            out.push(r.clone());
        }
    }
    out
}

impl Summary<'_> {
    fn is_visible(&self, node: &PlanNode) -> bool {
        node.relation
            .as_ref()
            .is_none_or(|r| self.visible.contains(r))
    }

    fn facts(&self, relation: &(String, String)) -> Option<&RelationFacts> {
        self.relations
            .iter()
            .find(|f| f.schema == relation.0 && f.name == relation.1)
    }

    /// The costliest steps the caller may see, costliest first.
    fn steps(&self) -> Vec<&PlanNode> {
        let mut steps: Vec<&PlanNode> = self
            .estimate
            .nodes
            .iter()
            .filter(|n| self.is_visible(n))
            .collect();
        steps.sort_by(|a, b| b.self_cost.total_cmp(&a.self_cost));
        steps.truncate(MAX_STEPS);
        steps
    }

    /// Whether every step is over a visible relation (or none): only then are expressions
    /// shown.
    fn all_visible(&self) -> bool {
        self.estimate.nodes.iter().all(|n| self.is_visible(n))
    }

    /// Why no number of the plan may be shown, if so: the plan reads rows the caller cannot
    /// see — a relation behind a view, or one under row-level security (the planner's
    /// estimates ignore the policies) — so every estimate, step row count and relation size
    /// is a count of hidden rows. Only which limit was exceeded is said then.
    pub fn numbers_withheld(&self) -> Option<&'static str> {
        if !self.all_visible() {
            return Some("the plan reads relations you cannot see (behind a view)");
        }
        let scanned = scanned(self.estimate, self.visible);
        for r in &scanned {
            match self.facts(r) {
                Some(f) if !f.row_security => {}
                Some(_) => return Some("a relation it reads has row-level security"),
                None => return Some("the source's catalog could not be read"),
            }
        }
        None
    }

    fn step_json(&self, n: &PlanNode) -> Value {
        let expressions = self.all_visible();
        let mut step = json!({
            "step": n.node_type,
            "rows": n.rows,
            "cost": round(n.self_cost),
        });
        let Some(obj) = step.as_object_mut() else {
            return step;
        };
        if let Some(r) = &n.relation {
            obj.insert("relation".into(), json!(format!("{}.{}", r.0, r.1)));
            // A filter may carry a row-level security policy's predicate: only where the
            // catalog says the relation has none.
            let shown = match (expressions, self.facts(r)) {
                (false, _) => Err("(not shown: the plan reads relations you cannot see)"),
                (true, Some(f)) if !f.row_security => Ok(()),
                (true, Some(_)) => Err("(not shown: row-level security)"),
                (true, None) => Err("(not shown: the catalog could not be read)"),
            };
            if let Some(f) = &n.filter {
                let text = match shown {
                    Ok(()) => f.as_str(),
                    Err(why) => why,
                };
                obj.insert("filter".into(), json!(text));
            }
        }
        if let Some(index) = &n.index {
            obj.insert("index".into(), json!(index));
        }
        if expressions && !n.sort_key.is_empty() {
            obj.insert("sort_key".into(), json!(n.sort_key));
        }
        if let Some(j) = &n.join_type {
            obj.insert("join_type".into(), json!(j));
        }
        step
    }

    fn relation_json(&self, f: &RelationFacts) -> Value {
        let statistics = match f.analyzed_at {
            Some(at) => json!({
                "analyzed_at": at.to_rfc3339(),
                "age_secs": (self.now - at).num_seconds().max(0),
            }),
            None => {
                json!({"analyzed_at": null, "note": "never analyzed: the planner is guessing its size"})
            }
        };
        json!({
            "relation": format!("{}.{}", f.schema, f.name),
            "estimated_rows": f.estimated_rows.max(0.0),
            "indexes": f.indexes.iter().take(MAX_INDEXES).collect::<Vec<_>>(),
            "statistics": statistics,
        })
    }

    /// The structured summary (the refusal's `details.cost`, the approval's preview).
    pub fn to_json(&self) -> Value {
        if let Some(why) = self.numbers_withheld() {
            return json!({
                "estimate": {"withheld": why},
                "exceeded": self.exceeded.iter().map(|l| json!({
                    "measure": l.measure.as_str(),
                    "limit": l.limit,
                    "rule": l.rule,
                })).collect::<Vec<_>>(),
                "expensive_steps": [],
                "relations": [],
            });
        }
        let e = self.estimate;
        let hidden = e.nodes.iter().filter(|n| !self.is_visible(n)).count();
        let relations: Vec<Value> = scanned(e, self.visible)
            .iter()
            .filter_map(|r| self.facts(r))
            .map(|f| self.relation_json(f))
            .collect();
        json!({
            "estimate": {
                "cost": round(e.total_cost),
                "startup_cost": round(e.startup_cost),
                "result_rows": e.result_rows,
                "max_step_rows": e.max_rows,
                "max_step_bytes": e.max_bytes.round(),
            },
            "exceeded": self.exceeded.iter().map(|l| json!({
                "measure": l.measure.as_str(),
                "estimate": round(e.measure(l.measure)),
                "limit": l.limit,
                "rule": l.rule,
            })).collect::<Vec<_>>(),
            "expensive_steps": self.steps().into_iter().map(|n| self.step_json(n)).collect::<Vec<_>>(),
            "steps_not_shown": hidden,
            "relations": relations,
        })
    }

    /// One sentence for the agent: what was estimated against which limit, the costliest
    /// step, and what to do.
    pub fn sentence(&self) -> String {
        let e = self.estimate;
        let mut s = String::from("Refused before it ran: ");
        if let Some(why) = self.numbers_withheld() {
            let parts: Vec<String> = self
                .exceeded
                .iter()
                .map(|l| {
                    format!(
                        "the {} is over its limit of {} ({})",
                        l.measure.noun(),
                        l.limit,
                        l.rule
                    )
                })
                .collect();
            s.push_str(&parts.join("; "));
            s.push_str(&format!(
                ". The estimate is not shown: {why}. Narrow the read (a predicate on an indexed \
                 column, a smaller LIMIT, fewer joined rows), or ask an operator to raise the limit."
            ));
            return s;
        }
        let parts: Vec<String> = self
            .exceeded
            .iter()
            .map(|l| {
                format!(
                    "the {} is {} against a limit of {} ({})",
                    l.measure.noun(),
                    round(e.measure(l.measure)),
                    l.limit,
                    l.rule
                )
            })
            .collect();
        s.push_str(&parts.join("; "));
        s.push('.');
        // The costliest scan is what a narrower read changes; any step where none is shown.
        let steps = self.steps();
        let top = steps
            .iter()
            .find(|n| n.relation.is_some())
            .or_else(|| steps.first());
        if let Some(top) = top {
            let what = if top.relation.is_some() {
                "scan"
            } else {
                "step"
            };
            s.push_str(&format!(" The costliest {what} is a {}", top.node_type));
            if let Some(r) = &top.relation {
                s.push_str(&format!(" of {}.{}", r.0, r.1));
            }
            s.push_str(&format!(" (≈{} rows)", top.rows));
            if let Some(f) = top.relation.as_ref().and_then(|r| self.facts(r)) {
                if !f.indexes.is_empty() {
                    s.push_str(&format!(
                        "; {}.{} has {} index(es), listed in details",
                        f.schema,
                        f.name,
                        f.indexes.len()
                    ));
                } else {
                    s.push_str(&format!("; {}.{} has no index", f.schema, f.name));
                }
            }
            s.push('.');
        }
        s.push_str(
            " Narrow it with a predicate on an indexed column, a smaller LIMIT, or fewer joined \
             rows, or ask an operator to raise the limit. Estimates come from the source's \
             statistics (their age is in details).",
        );
        s
    }
}

/// Two decimals are all an estimate is worth.
fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::governance::cost::{CostMeasure, OnExceed};

    fn plan() -> PlanEstimate {
        PlanEstimate::from_explain(&json!([{"Plan": {
            "Node Type": "Hash Join", "Join Type": "Inner", "Startup Cost": 5.0, "Total Cost": 900.0,
            "Plan Rows": 1000, "Plan Width": 20,
            "Plans": [
                {"Node Type": "Seq Scan", "Schema": "public", "Relation Name": "events",
                 "Alias": "e", "Startup Cost": 0.0, "Total Cost": 800.0, "Plan Rows": 100000,
                 "Plan Width": 20, "Filter": "(e.note ~~ '%x%'::text)"},
                {"Node Type": "Hash", "Startup Cost": 0.0, "Total Cost": 50.0, "Plan Rows": 10, "Plan Width": 8,
                 "Plans": [{"Node Type": "Seq Scan", "Schema": "hr", "Relation Name": "salaries",
                            "Alias": "s", "Startup Cost": 0.0, "Total Cost": 50.0, "Plan Rows": 5000,
                            "Plan Width": 8, "Filter": "(s.amount > 100000)"}]}
            ]
        }}]))
        .unwrap()
    }

    fn facts(schema: &str, name: &str, row_security: bool) -> RelationFacts {
        RelationFacts {
            schema: schema.into(),
            name: name.into(),
            estimated_rows: 100000.0,
            row_security,
            analyzed_at: None,
            indexes: vec![format!(
                "CREATE UNIQUE INDEX {name}_pkey ON {schema}.{name} USING btree (id)"
            )],
        }
    }

    /// Issue 47 §4: a plan that reads rows the caller cannot see (behind a view, under
    /// row-level security, or not known) shows no number of it and names nothing hidden;
    /// only a plan wholly over visible relations without policies is shown.
    #[test]
    fn a_plan_over_hidden_rows_shows_no_number() {
        let e = plan();
        let exceeded = [CostLimit {
            measure: CostMeasure::Cost,
            limit: 100,
            on_exceed: OnExceed::Refuse,
            rule: "policy cost rule r: max_cost 100".into(),
        }];
        let events = ("public".to_string(), "events".to_string());
        let salaries = ("hr".to_string(), "salaries".to_string());
        // (visible, catalog facts, shown)
        let cases = [
            (
                vec![events.clone()],
                vec![facts("public", "events", false)],
                false,
            ),
            (
                vec![events.clone(), salaries.clone()],
                vec![
                    facts("public", "events", true),
                    facts("hr", "salaries", false),
                ],
                false,
            ),
            (
                vec![events.clone(), salaries.clone()],
                vec![facts("public", "events", false)],
                false,
            ),
            (
                vec![events.clone(), salaries.clone()],
                vec![
                    facts("public", "events", false),
                    facts("hr", "salaries", false),
                ],
                true,
            ),
        ];
        for (visible, relations, shown) in cases {
            let s = Summary {
                estimate: &e,
                exceeded: &exceeded,
                visible: &visible,
                relations: &relations,
                now: Utc::now(),
            };
            let j = s.to_json();
            let text = j.to_string() + &s.sentence();
            assert_eq!(j["exceeded"][0]["limit"], 100, "{text}");
            if shown {
                assert_eq!(j["exceeded"][0]["estimate"], 900.0, "{text}");
                assert_eq!(j["expensive_steps"][0]["filter"], "(e.note ~~ '%x%'::text)");
                assert!(text.contains("Seq Scan of public.events"), "{text}");
            } else {
                assert!(j["estimate"]["withheld"].is_string(), "{text}");
                for hidden in [
                    "900", "1000", "5000", "salaries", "amount", "%x%", "Seq Scan",
                ] {
                    assert!(!text.contains(hidden), "{hidden} in {text}");
                }
            }
        }
    }
}
