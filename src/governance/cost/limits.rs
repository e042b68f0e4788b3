//! The cost limits that apply to one call, and whether an estimate is admitted under them.
//!
//! A policy rule bounds one measure of the planner's estimate ([`CostMeasure`]); where several
//! rules bound the same measure, the lowest limit applies, with the rule that set it (its
//! refusal names that rule). What an over-limit read gets is the rule's [`OnExceed`]: refused
//! (the default), or queued for approval.

use serde::{Deserialize, Serialize};

use super::plan::PlanEstimate;

/// What a cost rule bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CostMeasure {
    /// The planner's total cost of the statement as it runs (under its row cap), in the
    /// planner's cost units (`seq_page_cost` = 1).
    Cost,
    /// The most rows any step of the plan is estimated to produce.
    Rows,
    /// The most bytes any step of the plan is estimated to produce (rows × row width).
    Bytes,
}

impl CostMeasure {
    pub const ALL: [CostMeasure; 3] = [CostMeasure::Cost, CostMeasure::Rows, CostMeasure::Bytes];

    /// The rule kind that bounds it, as an access file spells it.
    pub fn rule_kind(self) -> &'static str {
        match self {
            CostMeasure::Cost => "max_cost",
            CostMeasure::Rows => "max_plan_rows",
            CostMeasure::Bytes => "max_plan_bytes",
        }
    }

    /// The measure as a sentence names it.
    pub fn noun(self) -> &'static str {
        match self {
            CostMeasure::Cost => "estimated cost",
            CostMeasure::Rows => "estimated rows of a plan step",
            CostMeasure::Bytes => "estimated bytes of a plan step",
        }
    }

    /// The label of `interlock_cost_*` metrics and of audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            CostMeasure::Cost => "cost",
            CostMeasure::Rows => "rows",
            CostMeasure::Bytes => "bytes",
        }
    }
}

/// What a read over a limit gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "then")]
pub enum OnExceed {
    /// Refused (`cost_exceeded`), with a summary of the plan.
    #[default]
    Refuse,
    /// Held for this many human approvals, the plan shown to the approvers.
    Queue { approvals: u32 },
}

/// One limit as it applies to a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostLimit {
    pub measure: CostMeasure,
    pub limit: u64,
    #[serde(flatten)]
    pub on_exceed: OnExceed,
    /// The rule that set it, e.g. `policy cost rule analysts: max_cost 50000`.
    pub rule: String,
}

/// The limits of one call: at most one per measure, the lowest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CostLimits(Vec<CostLimit>);

impl CostLimits {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &CostLimit> {
        self.0.iter()
    }

    /// The limit on `measure`, if any.
    pub fn get(&self, measure: CostMeasure) -> Option<&CostLimit> {
        self.0.iter().find(|l| l.measure == measure)
    }

    /// Adds `limit`, keeping the lower of two on one measure (the first on a tie).
    pub fn tighten(&mut self, limit: CostLimit) {
        match self.0.iter_mut().find(|l| l.measure == limit.measure) {
            Some(held) if limit.limit < held.limit => *held = limit,
            Some(_) => {}
            None => {
                self.0.push(limit);
                self.0.sort_by_key(|l| l.measure);
            }
        }
    }

    /// Whether `estimate` is admitted: every limit holds; otherwise the limits it exceeds
    /// and what that gets (refused when any exceeded limit refuses, else queued for the most
    /// approvals any of them asks).
    pub fn admit(&self, estimate: &PlanEstimate) -> Admission {
        let exceeded: Vec<CostLimit> = self
            .0
            .iter()
            .filter(|l| estimate.measure(l.measure) > l.limit as f64)
            .cloned()
            .collect();
        if exceeded.is_empty() {
            return Admission::Admitted;
        }
        let queue = exceeded
            .iter()
            .map(|l| match l.on_exceed {
                OnExceed::Queue { approvals } => Some(approvals),
                OnExceed::Refuse => None,
            })
            .try_fold(0, |most, a| a.map(|a| most.max(a)));
        match queue {
            Some(approvals) => Admission::Queued {
                approvals: approvals.max(1),
                exceeded,
            },
            None => Admission::Refused { exceeded },
        }
    }
}

/// What the limits make of one estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    Refused {
        exceeded: Vec<CostLimit>,
    },
    Queued {
        approvals: u32,
        exceeded: Vec<CostLimit>,
    },
}

/// A write the planner estimates above `cost` needs `approvals` approvals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CostApprovals {
    pub cost: u64,
    pub approvals: u32,
    /// The rule that asks it.
    pub rule: String,
}

impl CostApprovals {
    /// The most approvals any of `rules` asks of a write estimated at `cost` (0: none).
    pub fn required(rules: &[CostApprovals], cost: f64) -> u32 {
        rules
            .iter()
            .filter(|r| cost > r.cost as f64)
            .map(|r| r.approvals)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(measure: CostMeasure, limit: u64, on_exceed: OnExceed, rule: &str) -> CostLimit {
        CostLimit {
            measure,
            limit,
            on_exceed,
            rule: rule.into(),
        }
    }

    fn estimate(cost: f64, rows: f64, bytes: f64) -> PlanEstimate {
        PlanEstimate {
            total_cost: cost,
            startup_cost: 0.0,
            result_rows: 1.0,
            max_rows: rows,
            max_bytes: bytes,
            nodes: Vec::new(),
        }
    }

    #[test]
    fn the_lowest_limit_of_a_measure_applies_with_its_rule() {
        let mut limits = CostLimits::default();
        limits.tighten(limit(CostMeasure::Cost, 100, OnExceed::Refuse, "a"));
        limits.tighten(limit(CostMeasure::Rows, 10, OnExceed::Refuse, "r"));
        limits.tighten(limit(CostMeasure::Cost, 50, OnExceed::Refuse, "b"));
        limits.tighten(limit(CostMeasure::Cost, 70, OnExceed::Refuse, "c"));
        assert_eq!(
            limits.get(CostMeasure::Cost).map(|l| l.rule.as_str()),
            Some("b")
        );
        assert_eq!(limits.iter().count(), 2);
    }

    #[test]
    fn an_estimate_is_admitted_refused_or_queued_as_its_exceeded_limits_say() {
        let queue = |n| OnExceed::Queue { approvals: n };
        let cases: [(Vec<CostLimit>, PlanEstimate, &str); 6] = [
            (vec![], estimate(1e9, 1e9, 1e9), "admitted"),
            (
                vec![limit(CostMeasure::Cost, 100, OnExceed::Refuse, "c")],
                estimate(100.0, 1e9, 1e9),
                "admitted",
            ),
            (
                vec![limit(CostMeasure::Cost, 100, OnExceed::Refuse, "c")],
                estimate(100.5, 1.0, 1.0),
                "refused c",
            ),
            (
                vec![
                    limit(CostMeasure::Cost, 100, queue(2), "c"),
                    limit(CostMeasure::Rows, 10, OnExceed::Refuse, "r"),
                ],
                estimate(500.0, 50.0, 1.0),
                "refused c r",
            ),
            (
                vec![
                    limit(CostMeasure::Cost, 100, queue(2), "c"),
                    limit(CostMeasure::Bytes, 10, queue(3), "b"),
                ],
                estimate(500.0, 1.0, 50.0),
                "queued 3 c b",
            ),
            (
                vec![
                    limit(CostMeasure::Cost, 100, queue(2), "c"),
                    limit(CostMeasure::Rows, 10, OnExceed::Refuse, "r"),
                ],
                estimate(500.0, 5.0, 1.0),
                "queued 2 c",
            ),
        ];
        for (set, e, want) in cases {
            let mut limits = CostLimits::default();
            for l in set {
                limits.tighten(l);
            }
            let names = |ex: &[CostLimit]| {
                ex.iter()
                    .map(|l| l.rule.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let got = match limits.admit(&e) {
                Admission::Admitted => "admitted".to_string(),
                Admission::Refused { exceeded } => format!("refused {}", names(&exceeded)),
                Admission::Queued {
                    approvals,
                    exceeded,
                } => format!("queued {approvals} {}", names(&exceeded)),
            };
            assert_eq!(got, want);
        }
    }

    #[test]
    fn writes_above_a_cost_need_the_most_approvals_any_rule_asks() {
        let rules = [
            CostApprovals {
                cost: 1_000,
                approvals: 2,
                rule: "a".into(),
            },
            CostApprovals {
                cost: 100_000,
                approvals: 3,
                rule: "b".into(),
            },
        ];
        for (cost, want) in [(10.0, 0), (1_000.0, 0), (1_000.5, 2), (2e5, 3)] {
            assert_eq!(CostApprovals::required(&rules, cost), want, "{cost}");
        }
    }
}
