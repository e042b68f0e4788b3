//! The approval state machine, pure.
//!
//! ```text
//! pending ──approve (enough distinct approvers)──▶ approved ──claim──▶ executing ──▶ executed | failed
//!    │  └──reject──▶ rejected                                               │
//!    └──ttl──▶ expired                            gateway died here ──▶ outcome_unknown
//! ```
//!
//! The database enforces it with compare-and-set updates; this module states the rules once so
//! the admin API, the queue and the tests agree.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    Pending,
    Approved,
    Executing,
    Executed,
    Failed,
    Rejected,
    Expired,
    OutcomeUnknown,
}

impl ApprovalState {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalState::Pending => "pending",
            ApprovalState::Approved => "approved",
            ApprovalState::Executing => "executing",
            ApprovalState::Executed => "executed",
            ApprovalState::Failed => "failed",
            ApprovalState::Rejected => "rejected",
            ApprovalState::Expired => "expired",
            ApprovalState::OutcomeUnknown => "outcome_unknown",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "pending" => ApprovalState::Pending,
            "approved" => ApprovalState::Approved,
            "executing" => ApprovalState::Executing,
            "executed" => ApprovalState::Executed,
            "failed" => ApprovalState::Failed,
            "rejected" => ApprovalState::Rejected,
            "expired" => ApprovalState::Expired,
            "outcome_unknown" => ApprovalState::OutcomeUnknown,
            _ => return None,
        })
    }

    /// No further transition is possible.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ApprovalState::Executed
                | ApprovalState::Failed
                | ApprovalState::Rejected
                | ApprovalState::Expired
                | ApprovalState::OutcomeUnknown
        )
    }
}

/// An approver's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ApproverChoice {
    Approve,
    Reject,
}

/// Why a decision cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionRefused {
    #[error("the approval is {0}, not pending; only pending approvals can be decided")]
    NotPending(&'static str),
    #[error("the approval expired before it was decided")]
    Expired,
    #[error("an identity can never approve or reject its own request")]
    SelfApproval,
    #[error("you already decided this approval")]
    AlreadyDecided,
}

/// Everything a decision depends on.
#[derive(Debug, Clone, Copy)]
pub struct DecisionInput {
    pub state: ApprovalState,
    pub expired: bool,
    pub by_requester: bool,
    pub already_decided_by_this_approver: bool,
    /// Distinct approvals recorded before this decision.
    pub approvals_so_far: u32,
    pub approvals_required: u32,
}

/// The state after a valid decision (or why it is refused).
pub fn decide(
    input: DecisionInput,
    verdict: ApproverChoice,
) -> Result<ApprovalState, DecisionRefused> {
    if input.state != ApprovalState::Pending {
        return Err(DecisionRefused::NotPending(input.state.as_str()));
    }
    if input.expired {
        return Err(DecisionRefused::Expired);
    }
    if input.by_requester {
        return Err(DecisionRefused::SelfApproval);
    }
    if input.already_decided_by_this_approver {
        return Err(DecisionRefused::AlreadyDecided);
    }
    Ok(match verdict {
        ApproverChoice::Reject => ApprovalState::Rejected,
        ApproverChoice::Approve
            if input.approvals_so_far + 1 >= input.approvals_required.max(1) =>
        {
            ApprovalState::Approved
        }
        ApproverChoice::Approve => ApprovalState::Pending,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input() -> DecisionInput {
        DecisionInput {
            state: ApprovalState::Pending,
            expired: false,
            by_requester: false,
            already_decided_by_this_approver: false,
            approvals_so_far: 0,
            approvals_required: 1,
        }
    }

    #[test]
    fn decisions_follow_the_rules() {
        use ApprovalState::*;
        let cases: Vec<(
            DecisionInput,
            ApproverChoice,
            Result<ApprovalState, DecisionRefused>,
        )> = vec![
            (input(), ApproverChoice::Approve, Ok(Approved)),
            (input(), ApproverChoice::Reject, Ok(Rejected)),
            (
                DecisionInput {
                    approvals_required: 2,
                    ..input()
                },
                ApproverChoice::Approve,
                Ok(Pending),
            ),
            (
                DecisionInput {
                    approvals_required: 2,
                    approvals_so_far: 1,
                    ..input()
                },
                ApproverChoice::Approve,
                Ok(Approved),
            ),
            (
                DecisionInput {
                    approvals_required: 2,
                    approvals_so_far: 1,
                    ..input()
                },
                ApproverChoice::Reject,
                Ok(Rejected),
            ),
            (
                DecisionInput {
                    state: Approved,
                    ..input()
                },
                ApproverChoice::Approve,
                Err(DecisionRefused::NotPending("approved")),
            ),
            (
                DecisionInput {
                    state: Executed,
                    ..input()
                },
                ApproverChoice::Reject,
                Err(DecisionRefused::NotPending("executed")),
            ),
            (
                DecisionInput {
                    expired: true,
                    ..input()
                },
                ApproverChoice::Approve,
                Err(DecisionRefused::Expired),
            ),
            (
                DecisionInput {
                    by_requester: true,
                    ..input()
                },
                ApproverChoice::Approve,
                Err(DecisionRefused::SelfApproval),
            ),
            (
                DecisionInput {
                    already_decided_by_this_approver: true,
                    approvals_required: 2,
                    ..input()
                },
                ApproverChoice::Approve,
                Err(DecisionRefused::AlreadyDecided),
            ),
        ];
        for (i, (inp, verdict, want)) in cases.into_iter().enumerate() {
            assert_eq!(decide(inp, verdict), want, "case {i}");
        }
    }

    #[test]
    fn states_round_trip_and_finality() {
        use ApprovalState::*;
        for s in [
            Pending,
            Approved,
            Executing,
            Executed,
            Failed,
            Rejected,
            Expired,
            OutcomeUnknown,
        ] {
            assert_eq!(ApprovalState::parse(s.as_str()), Some(s));
        }
        assert!(!Pending.is_final() && !Approved.is_final() && !Executing.is_final());
        assert!(Executed.is_final() && OutcomeUnknown.is_final());
    }
}
