//! The approval state machine, pure.
//!
//! ```text
//! pending ──approve (enough distinct approvers)──▶ approved ──claim──▶ executing ──▶ executed | failed
//!    ▲                                                                      │
//!    └──── the run exceeded an estimated bound: rolled back, handed back ───┘
//!    │  ├──reject──▶ rejected                                               │
//!    │  └──requester withdraws (cancels its task)──▶ withdrawn              │
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
    /// The requester withdrew it while it was pending (it cancelled the MCP task waiting on it).
    Withdrawn,
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
            ApprovalState::Withdrawn => "withdrawn",
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
            "withdrawn" => ApprovalState::Withdrawn,
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
                | ApprovalState::Withdrawn
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

/// Why a requester cannot withdraw an approval.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WithdrawRefused {
    #[error("only the identity that requested it can withdraw an approval")]
    NotRequester,
    #[error("the approval is {0}: it was approved and runs now, so it can no longer be withdrawn")]
    AlreadyApproved(&'static str),
    #[error("the approval is already {0}; nothing is left to withdraw")]
    Ended(&'static str),
    #[error("the approval expired before it was withdrawn")]
    Expired,
}

/// The state after the requester withdraws its own approval (or why it cannot): only a
/// pending approval that has not expired can be withdrawn; once approved it runs.
pub fn withdraw(
    state: ApprovalState,
    expired: bool,
    by_requester: bool,
) -> Result<ApprovalState, WithdrawRefused> {
    if !by_requester {
        return Err(WithdrawRefused::NotRequester);
    }
    match state {
        ApprovalState::Pending if expired => Err(WithdrawRefused::Expired),
        ApprovalState::Pending => Ok(ApprovalState::Withdrawn),
        ApprovalState::Approved | ApprovalState::Executing => {
            Err(WithdrawRefused::AlreadyApproved(state.as_str()))
        }
        ended => Err(WithdrawRefused::Ended(ended.as_str())),
    }
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
            Withdrawn,
        ] {
            assert_eq!(ApprovalState::parse(s.as_str()), Some(s));
        }
        assert!(!Pending.is_final() && !Approved.is_final() && !Executing.is_final());
        assert!(Executed.is_final() && OutcomeUnknown.is_final() && Withdrawn.is_final());
    }

    #[test]
    fn only_the_requester_withdraws_and_only_while_pending() {
        use ApprovalState::*;
        let cases = [
            (Pending, false, true, Ok(Withdrawn)),
            (Pending, false, false, Err(WithdrawRefused::NotRequester)),
            (Pending, true, true, Err(WithdrawRefused::Expired)),
            (
                Approved,
                false,
                true,
                Err(WithdrawRefused::AlreadyApproved("approved")),
            ),
            (
                Executing,
                false,
                true,
                Err(WithdrawRefused::AlreadyApproved("executing")),
            ),
            (
                Executed,
                false,
                true,
                Err(WithdrawRefused::Ended("executed")),
            ),
            (
                Rejected,
                false,
                true,
                Err(WithdrawRefused::Ended("rejected")),
            ),
            (
                Withdrawn,
                false,
                true,
                Err(WithdrawRefused::Ended("withdrawn")),
            ),
            (Expired, true, true, Err(WithdrawRefused::Ended("expired"))),
        ];
        for (state, expired, by_requester, want) in cases {
            assert_eq!(withdraw(state, expired, by_requester), want, "{state:?}");
        }
    }
}
