//! What a decision does to a call, as one comparable value ([`CallEffect`]): refused (by
//! which code and rule), or allowed as a read (its row cap, its masked columns) or as a
//! write (queued for how many approvals). The pipeline keeps the effect of every governed
//! query in its audit record; replaying a record against another access profile compares
//! the effect it had with the effect it would have ([`CallEffect::changes`]), and a
//! report-only rule's would-be effect is the same comparison.

use serde::{Deserialize, Serialize};

use super::redaction::MaskStrategy;
use super::verdict::{Allowed, AllowedClass, Refusal};

/// The effect of a decision on a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum CallEffect {
    /// Refused: the stable code and the rule that refused.
    Refuse { code: String, rule: String },
    /// A read runs, capped at `row_cap` rows by policy, with these output columns masked
    /// (`name=strategy`, in output order).
    Read {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        row_cap: Option<u64>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        masked: Vec<String>,
    },
    /// The call waits for `approvals` approvals (every write; a read a
    /// `require_approval` rule applies to).
    Queue { approvals: u32 },
}

/// One way the effect of a call changes between two decisions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "change")]
pub enum Change {
    NewlyRefused {
        code: String,
        rule: String,
    },
    NewlyAllowed,
    /// Refused before and after, by another code.
    RefusedOtherwise {
        code: String,
        rule: String,
    },
    ApprovalsChanged {
        from: u32,
        to: u32,
    },
    /// A read that ran at once would wait for approvals.
    NewlyQueued {
        approvals: u32,
    },
    /// A read that waited for approvals would run at once.
    NoLongerQueued,
    RowCapChanged {
        from: Option<u64>,
        to: Option<u64>,
    },
    NewlyMasked {
        columns: Vec<String>,
    },
    NewlyUnmasked {
        columns: Vec<String>,
    },
}

impl Change {
    /// The counter of a report this change adds to.
    pub fn kind(&self) -> &'static str {
        match self {
            Change::NewlyRefused { .. } => "newly_refused",
            Change::NewlyAllowed => "newly_allowed",
            Change::RefusedOtherwise { .. } => "refused_otherwise",
            Change::ApprovalsChanged { .. } => "approvals_changed",
            Change::NewlyQueued { .. } => "newly_queued",
            Change::NoLongerQueued => "no_longer_queued",
            Change::RowCapChanged { .. } => "row_cap_changed",
            Change::NewlyMasked { .. } => "newly_masked",
            Change::NewlyUnmasked { .. } => "newly_unmasked",
        }
    }
}

/// How a mask is named in an effect.
pub fn strategy_label(s: &MaskStrategy) -> String {
    match s {
        MaskStrategy::Redact => "redact".into(),
        MaskStrategy::Partial { keep_last } => format!("partial({keep_last})"),
        MaskStrategy::Hash => "hash".into(),
        MaskStrategy::Null => "null".into(),
    }
}

impl CallEffect {
    pub fn refused(code: &str, rule: &str) -> Self {
        CallEffect::Refuse {
            code: code.to_string(),
            rule: rule.to_string(),
        }
    }

    pub fn of_refusal(r: &Refusal) -> Self {
        Self::refused(r.code, &r.rule)
    }

    pub fn of_allowed(a: &Allowed) -> Self {
        match a.class {
            AllowedClass::Write => CallEffect::Queue {
                approvals: a.approvals_required.max(1),
            },
            AllowedClass::Read if a.approvals_required > 0 => CallEffect::Queue {
                approvals: a.approvals_required,
            },
            AllowedClass::Read => CallEffect::Read {
                row_cap: a.row_cap,
                masked: a
                    .output_columns
                    .iter()
                    .filter_map(|c| {
                        c.mask
                            .as_ref()
                            .map(|m| format!("{}={}", c.name, strategy_label(&m.strategy)))
                    })
                    .collect(),
            },
        }
    }

    pub fn of(result: &Result<Allowed, Refusal>) -> Self {
        match result {
            Ok(a) => Self::of_allowed(a),
            Err(r) => Self::of_refusal(r),
        }
    }

    /// Whether the call was refused.
    pub fn is_refusal(&self) -> bool {
        matches!(self, CallEffect::Refuse { .. })
    }

    /// Every way `after` differs from `self` (empty: the same effect). A call queued with
    /// a different number of approvals is `approvals_changed`; a read that becomes queued
    /// (or no longer is) is `newly_queued` (`no_longer_queued`).
    pub fn changes(&self, after: &CallEffect) -> Vec<Change> {
        use CallEffect::{Queue, Read, Refuse};
        match (self, after) {
            (Refuse { code: a, .. }, Refuse { code, rule }) if a != code => {
                vec![Change::RefusedOtherwise {
                    code: code.clone(),
                    rule: rule.clone(),
                }]
            }
            (Refuse { .. }, Refuse { .. }) => Vec::new(),
            (Refuse { .. }, _) => vec![Change::NewlyAllowed],
            (_, Refuse { code, rule }) => vec![Change::NewlyRefused {
                code: code.clone(),
                rule: rule.clone(),
            }],
            (Queue { approvals: from }, Queue { approvals: to }) if from != to => {
                vec![Change::ApprovalsChanged {
                    from: *from,
                    to: *to,
                }]
            }
            (Read { .. }, Queue { approvals }) => vec![Change::NewlyQueued {
                approvals: *approvals,
            }],
            (Queue { .. }, Read { .. }) => vec![Change::NoLongerQueued],
            (
                Read {
                    row_cap: cap_before,
                    masked: before,
                },
                Read {
                    row_cap: cap_after,
                    masked: after,
                },
            ) => {
                let mut changes = Vec::new();
                if cap_before != cap_after {
                    changes.push(Change::RowCapChanged {
                        from: *cap_before,
                        to: *cap_after,
                    });
                }
                let newly: Vec<String> = after
                    .iter()
                    .filter(|c| !before.contains(c))
                    .cloned()
                    .collect();
                let unmasked: Vec<String> = before
                    .iter()
                    .filter(|c| !after.contains(c))
                    .cloned()
                    .collect();
                if !newly.is_empty() {
                    changes.push(Change::NewlyMasked { columns: newly });
                }
                if !unmasked.is_empty() {
                    changes.push(Change::NewlyUnmasked { columns: unmasked });
                }
                changes
            }
            (Queue { .. }, Queue { .. }) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(cap: Option<u64>, masked: &[&str]) -> CallEffect {
        CallEffect::Read {
            row_cap: cap,
            masked: masked.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn changes_between_effects() {
        let refuse = CallEffect::refused("access_denied", "role r: deny read t");
        let cases: Vec<(CallEffect, CallEffect, Vec<&str>)> = vec![
            (read(None, &[]), read(None, &[]), vec![]),
            (read(None, &[]), refuse.clone(), vec!["newly_refused"]),
            (refuse.clone(), read(None, &[]), vec!["newly_allowed"]),
            (refuse.clone(), refuse.clone(), vec![]),
            (
                refuse.clone(),
                CallEffect::refused("policy_denied", "p"),
                vec!["refused_otherwise"],
            ),
            (read(None, &[]), read(Some(5), &[]), vec!["row_cap_changed"]),
            (
                read(None, &["email=redact"]),
                read(None, &["email=hash", "ssn=null"]),
                vec!["newly_masked", "newly_unmasked"],
            ),
            (
                CallEffect::Queue { approvals: 1 },
                CallEffect::Queue { approvals: 2 },
                vec!["approvals_changed"],
            ),
            (
                CallEffect::Queue { approvals: 1 },
                CallEffect::Queue { approvals: 1 },
                vec![],
            ),
            (
                read(None, &[]),
                CallEffect::Queue { approvals: 1 },
                vec!["newly_queued"],
            ),
            (
                CallEffect::Queue { approvals: 2 },
                read(Some(3), &[]),
                vec!["no_longer_queued"],
            ),
        ];
        for (before, after, want) in cases {
            let got: Vec<&str> = before.changes(&after).iter().map(Change::kind).collect();
            assert_eq!(got, want, "{before:?} -> {after:?}");
        }
    }

    #[test]
    fn an_effect_round_trips_through_its_record_form() {
        for e in [
            read(Some(3), &["email=partial(4)"]),
            read(None, &[]),
            CallEffect::Queue { approvals: 2 },
            CallEffect::refused("no_grant", "no role granted"),
        ] {
            let v = serde_json::to_value(&e).expect("serializes");
            let back: CallEffect = serde_json::from_value(v).expect("deserializes");
            assert_eq!(back, e);
        }
    }
}
