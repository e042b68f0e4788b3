//! The planner's estimate of one statement, read from `EXPLAIN (FORMAT JSON, VERBOSE)`.
//!
//! The measures a limit bounds ([`PlanEstimate::measure`]):
//!
//! - cost: the top node's `Total Cost`, the planner's estimate for the statement as it runs,
//!   row cap included (a `LIMIT` that lets a scan stop early lowers it; a sort of a whole
//!   table under a `LIMIT` does not);
//! - rows and bytes: the largest `Plan Rows` (and `Plan Rows × Plan Width`) of any node, the
//!   most any one step is estimated to produce, whether or not a `LIMIT` above stops it.
//!
//! A plan that cannot be read (not the shape PostgreSQL documents, a cost that is not a
//! finite number) is an error: admission fails closed on it.

use serde::Serialize;
use serde_json::Value;

use crate::governance::condition::PlanFacts;

/// The deepest plan tree read; deeper nodes are not listed (their costs are in their
/// parents' totals).
const MAX_DEPTH: usize = 64;
/// The most nodes read from one plan.
const MAX_NODES: usize = 2_000;

/// One node of the plan, as the summary needs it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanNode {
    /// `Seq Scan`, `Index Scan`, `Sort`, `Nested Loop`, …
    pub node_type: String,
    /// The relation scanned, `(schema, name)`, for a scan node.
    #[serde(skip)]
    pub relation: Option<(String, String)>,
    #[serde(skip)]
    pub index: Option<String>,
    #[serde(skip)]
    pub filter: Option<String>,
    #[serde(skip)]
    pub sort_key: Vec<String>,
    #[serde(skip)]
    pub join_type: Option<String>,
    pub rows: f64,
    pub width: f64,
    pub total_cost: f64,
    /// The node's own share of the cost: its total less its children's totals.
    pub self_cost: f64,
}

/// The estimate of one statement.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanEstimate {
    pub total_cost: f64,
    pub startup_cost: f64,
    /// Rows the statement is estimated to return.
    pub result_rows: f64,
    /// The most rows of any node.
    pub max_rows: f64,
    /// The most rows × width of any node.
    pub max_bytes: f64,
    /// Every node read, in plan order (parents first).
    pub nodes: Vec<PlanNode>,
}

impl PlanEstimate {
    /// Reads the output of `EXPLAIN (FORMAT JSON …)`: an array whose first element holds
    /// the plan under `"Plan"`.
    pub fn from_explain(document: &Value) -> Result<Self, String> {
        let top = document
            .get(0)
            .and_then(|d| d.get("Plan"))
            .ok_or("the plan is not an EXPLAIN (FORMAT JSON) document")?;
        let mut nodes = Vec::new();
        read_node(top, 0, &mut nodes)?;
        let first = nodes.first().ok_or("the plan has no nodes")?;
        let (total_cost, result_rows) = (first.total_cost, first.rows);
        let startup_cost = number(top, "Startup Cost")?;
        let max_rows = nodes.iter().map(|n| n.rows).fold(0.0, f64::max);
        let max_bytes = nodes.iter().map(|n| n.rows * n.width).fold(0.0, f64::max);
        Ok(PlanEstimate {
            total_cost,
            startup_cost,
            result_rows,
            max_rows,
            max_bytes,
            nodes,
        })
    }

    /// The value a limit on `measure` is compared with.
    pub fn measure(&self, measure: super::CostMeasure) -> f64 {
        match measure {
            super::CostMeasure::Cost => self.total_cost,
            super::CostMeasure::Rows => self.max_rows,
            super::CostMeasure::Bytes => self.max_bytes,
        }
    }

    /// The estimate as policy conditions read it (`plan.…`).
    pub fn facts(&self) -> PlanFacts {
        let whole = |v: f64| v.ceil().clamp(0.0, u64::MAX as f64) as u64;
        let mut seq_scans: Vec<String> = Vec::new();
        for n in self.nodes.iter().filter(|n| n.node_type == "Seq Scan") {
            if let Some((schema, name)) = &n.relation {
                let r = format!("{schema}.{name}");
                if !seq_scans.contains(&r) {
                    seq_scans.push(r);
                }
            }
        }
        PlanFacts {
            cost: whole(self.total_cost),
            rows: whole(self.max_rows),
            bytes: whole(self.max_bytes),
            result_rows: whole(self.result_rows),
            seq_scans,
        }
    }

    /// The budget units a read of this estimate takes: its cost, rounded up (at least 1).
    pub fn units(&self) -> f64 {
        self.total_cost.ceil().max(1.0)
    }
}

fn number(node: &Value, key: &str) -> Result<f64, String> {
    node.get(key)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("a plan node has no usable {key:?}"))
}

fn text(node: &Value, key: &str) -> Option<String> {
    node.get(key).and_then(Value::as_str).map(str::to_string)
}

/// Reads `node` and its children into `out`; returns the node's total cost.
fn read_node(node: &Value, depth: usize, out: &mut Vec<PlanNode>) -> Result<f64, String> {
    let total_cost = number(node, "Total Cost")?;
    if depth >= MAX_DEPTH || out.len() >= MAX_NODES {
        return Ok(total_cost);
    }
    let at = out.len();
    let relation = match (text(node, "Schema"), text(node, "Relation Name")) {
        (Some(schema), Some(name)) => Some((schema, name)),
        _ => None,
    };
    let sort_key = node
        .get("Sort Key")
        .and_then(Value::as_array)
        .map(|keys| {
            keys.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    out.push(PlanNode {
        node_type: text(node, "Node Type").ok_or("a plan node has no \"Node Type\"")?,
        relation,
        index: text(node, "Index Name"),
        filter: text(node, "Filter").or_else(|| text(node, "Index Cond")),
        sort_key,
        join_type: text(node, "Join Type"),
        rows: number(node, "Plan Rows")?,
        width: number(node, "Plan Width")?,
        total_cost,
        self_cost: total_cost,
    });
    let mut children = 0.0;
    if let Some(plans) = node.get("Plans").and_then(Value::as_array) {
        for child in plans {
            children += read_node(child, depth + 1, out)?;
        }
    }
    if let Some(n) = out.get_mut(at) {
        n.self_cost = (total_cost - children).max(0.0);
    }
    Ok(total_cost)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::governance::cost::CostMeasure;

    #[test]
    fn reads_the_measures_of_a_plan_from_every_node() {
        let doc = json!([{"Plan": {
            "Node Type": "Limit", "Startup Cost": 10.0, "Total Cost": 120.5,
            "Plan Rows": 101, "Plan Width": 40,
            "Plans": [{
                "Node Type": "Sort", "Startup Cost": 10.0, "Total Cost": 110.0,
                "Plan Rows": 1000000, "Plan Width": 40, "Sort Key": ["e.note"],
                "Plans": [{
                    "Node Type": "Seq Scan", "Schema": "public", "Relation Name": "events",
                    "Alias": "e", "Startup Cost": 0.0, "Total Cost": 60.0,
                    "Plan Rows": 1000000, "Plan Width": 40, "Filter": "(e.note ~~ '%x%'::text)"
                }]
            }]
        }}]);
        let e = PlanEstimate::from_explain(&doc).unwrap();
        assert_eq!(e.total_cost, 120.5);
        assert_eq!(e.result_rows, 101.0);
        assert_eq!(e.measure(CostMeasure::Rows), 1e6);
        assert_eq!(e.measure(CostMeasure::Bytes), 4e7);
        assert_eq!(e.units(), 121.0);
        let types: Vec<(&str, f64)> = e
            .nodes
            .iter()
            .map(|n| (n.node_type.as_str(), n.self_cost))
            .collect();
        assert_eq!(types, [("Limit", 10.5), ("Sort", 50.0), ("Seq Scan", 60.0)]);
        assert_eq!(
            e.nodes[2].relation,
            Some(("public".to_string(), "events".to_string()))
        );
        assert_eq!(e.nodes[1].sort_key, ["e.note"]);
        let facts = e.facts();
        assert_eq!(
            (facts.cost, facts.rows, facts.bytes),
            (121, 1_000_000, 40_000_000)
        );
        assert_eq!(facts.seq_scans, ["public.events"]);
    }

    #[test]
    fn a_plan_that_cannot_be_read_is_an_error() {
        for doc in [
            json!({}),
            json!([]),
            json!([{"Plan": {"Node Type": "Result", "Total Cost": "x", "Plan Rows": 1, "Plan Width": 0, "Startup Cost": 0}}]),
            json!([{"Plan": {"Node Type": "Result", "Total Cost": 1.0, "Plan Width": 0, "Startup Cost": 0}}]),
            json!([{"Plan": {"Total Cost": 1.0, "Plan Rows": 1, "Plan Width": 0, "Startup Cost": 0}}]),
            json!([{"Plan": {"Node Type": "Result", "Total Cost": -1.0, "Plan Rows": 1, "Plan Width": 0, "Startup Cost": 0}}]),
        ] {
            assert!(PlanEstimate::from_explain(&doc).is_err(), "{doc}");
        }
    }
}
