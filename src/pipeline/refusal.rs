//! A typed refusal: the governance step and rule that refused a call, what the caller is
//! told, and what the audit record says, in one value. [`Refusal::apply`] writes the record's
//! decision and returns the caller's answer from that one value, so the audit record and
//! the answer of every adapter cannot disagree about who refused and why.

use std::time::Duration;

use crate::call::AuditDraft;
use crate::call::Outcome;

/// How the caller is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 400, 401, 403 or 429 with the refusal's code, and a retry hint for 429.
    Denied {
        status: u16,
        retry_after: Option<Duration>,
    },
    /// 404: the thing asked for is not visible to the caller.
    NotFound,
    /// 503: the call cannot be served now (circuit open, source disabled, audit down).
    Unavailable,
}

/// One refusal by one governance step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The refusing step as the audit record names it (`identity`, `source`,
    /// `source_role`, `rate_limit`, the SQL decision's steps, `execution`, …).
    pub step: &'static str,
    /// Stable snake_case machine key.
    pub code: &'static str,
    /// Which rule refused, for the audit record.
    pub rule: String,
    /// The audit record's short reason (never sent to the caller).
    pub detail: String,
    /// The sentence the caller gets: what refused and what they can do.
    pub reason: String,
    pub answer: Answer,
    /// Structured facts for the caller (and the audit record's decision).
    pub details: Option<serde_json::Value>,
}

impl Refusal {
    /// A refusal answered with `status` (400, 401, 403, 429).
    pub fn denied(
        step: &'static str,
        status: u16,
        code: &'static str,
        rule: impl Into<String>,
        detail: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::new(
            step,
            code,
            rule,
            detail,
            reason,
            Answer::Denied {
                status,
                retry_after: None,
            },
        )
    }

    /// A refusal answered as not found (404).
    pub fn not_found(
        step: &'static str,
        code: &'static str,
        rule: impl Into<String>,
        detail: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::new(step, code, rule, detail, reason, Answer::NotFound)
    }

    /// A refusal answered as unavailable (503).
    pub fn unavailable(
        step: &'static str,
        code: &'static str,
        rule: impl Into<String>,
        detail: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self::new(step, code, rule, detail, reason, Answer::Unavailable)
    }

    fn new(
        step: &'static str,
        code: &'static str,
        rule: impl Into<String>,
        detail: impl Into<String>,
        reason: impl Into<String>,
        answer: Answer,
    ) -> Self {
        Refusal {
            step,
            code,
            rule: rule.into(),
            detail: detail.into(),
            reason: reason.into(),
            answer,
            details: None,
        }
    }

    /// The same refusal with structured facts the caller can act on.
    #[must_use]
    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The same refusal with a retry hint (429 answers carry `Retry-After`).
    #[must_use]
    pub fn retry_after(mut self, after: Duration) -> Self {
        if let Answer::Denied { retry_after, .. } = &mut self.answer {
            *retry_after = Some(after);
        }
        self
    }

    /// The caller's answer.
    pub fn outcome(&self) -> Outcome {
        match self.answer {
            Answer::Denied {
                status,
                retry_after,
            } => Outcome::Refused {
                status,
                code: self.code.to_string(),
                message: self.reason.clone(),
                retry_after,
                details: self.details.clone(),
            },
            Answer::NotFound => Outcome::NotFound {
                reason: self.reason.clone(),
            },
            Answer::Unavailable => Outcome::Unavailable {
                reason: self.reason.clone(),
            },
        }
    }

    /// Writes the refusal into the call's audit record and returns the caller's answer.
    pub fn apply(self, draft: &mut AuditDraft) -> Outcome {
        draft.refused(self.step, self.code, &self.rule, &self.detail);
        self.outcome()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{AuditDraft, Outcome, Refusal};

    #[test]
    fn the_audit_record_and_the_answer_come_from_one_refusal() {
        let cases = [
            (
                Refusal::denied(
                    "source_role",
                    403,
                    "no_grant",
                    "no role granted",
                    "no grant",
                    "ask for a grant",
                ),
                "refused",
            ),
            (
                Refusal::denied(
                    "rate_limit",
                    429,
                    "rate_limited",
                    "per identity",
                    "limit",
                    "retry later",
                )
                .retry_after(Duration::from_millis(1500)),
                "refused",
            ),
            (
                Refusal::not_found(
                    "approval",
                    "not_found",
                    "own approvals only",
                    "not found",
                    "no such approval",
                ),
                "refused",
            ),
            (
                Refusal::unavailable(
                    "execution",
                    "circuit_open",
                    "circuit breaker",
                    "circuit open",
                    "circuit open",
                ),
                "error",
            ),
        ];
        for (refusal, audited_outcome) in cases {
            let mut draft = AuditDraft::new("r1", "mcp", None, "interlock_query");
            let outcome = refusal.clone().apply(&mut draft);
            assert_eq!(draft.decision["verdict"], "refuse");
            assert_eq!(draft.decision["step"], refusal.step);
            assert_eq!(draft.decision["code"], refusal.code);
            assert_eq!(draft.decision["rule"], refusal.rule.as_str());
            assert_eq!(draft.decision["reason"], refusal.detail.as_str());
            assert_eq!(outcome.audit_outcome().as_str(), audited_outcome);
            match outcome {
                Outcome::Refused {
                    status,
                    code,
                    message,
                    retry_after,
                    ..
                } => {
                    assert!(matches!(status, 400..=429), "{status}");
                    assert_eq!(code, refusal.code);
                    assert_eq!(message, refusal.reason);
                    assert_eq!(retry_after.is_some(), status == 429);
                }
                Outcome::NotFound { reason } | Outcome::Unavailable { reason } => {
                    assert_eq!(reason, refusal.reason);
                }
                other => panic!("a refusal answered {other:?}"),
            }
        }
    }
}
