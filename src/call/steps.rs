//! The governance steps each tool runs (a subset of [`crate::stages::ORDER`], in that
//! order), and the trail a call leaves through them.
//!
//! Every call records each step it enters in its audit draft; a step entered out of the
//! order, or one its tool does not declare, is a bug caught by a debug assertion, so every
//! integration test checks the order of every call it makes.

use std::time::Instant;

use crate::mcp::ToolKind;
use crate::stages::{GovernanceStep, ORDER};

use GovernanceStep as S;

/// The steps `tool` runs, in order.
pub fn declared(tool: ToolKind) -> &'static [GovernanceStep] {
    match tool {
        ToolKind::Query => &[
            S::Identity,
            S::AuditGate,
            S::Source,
            S::SourceRole,
            S::Policy,
            S::RateLimit,
            S::WriteSafety,
            S::Breaker,
            S::Cache,
            S::Cost,
            S::Execution,
            S::Redaction,
            S::Audit,
        ],
        // Describes what the caller's roles and policies allow, source by source.
        ToolKind::ListSources | ToolKind::DescribeAccess | ToolKind::ApprovalStatus => &[
            S::Identity,
            S::AuditGate,
            S::RateLimit,
            S::Execution,
            S::Audit,
        ],
        // The describe grant is its policy: only describable tables are listed.
        ToolKind::DescribeSource => &[
            S::Identity,
            S::AuditGate,
            S::Source,
            S::SourceRole,
            S::Policy,
            S::RateLimit,
            S::Execution,
            S::Audit,
        ],
        ToolKind::Discover => &[
            S::Identity,
            S::AuditGate,
            S::Arguments,
            S::Source,
            S::SourceRole,
            S::RateLimit,
            S::Execution,
            S::Audit,
        ],
        // The asset's source is found among the sources the caller holds a role on, as
        // part of the search itself.
        ToolKind::RelatedDocuments => &[
            S::Identity,
            S::AuditGate,
            S::Arguments,
            S::RateLimit,
            S::Execution,
            S::Audit,
        ],
    }
}

/// Where a call is in its tool's steps, every step it entered (the audit record lists
/// them), and how long each took: a step is timed from entering it to entering the next
/// (`interlock_stage_seconds{stage}`, see [`crate::stages`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Trail {
    declared: Option<&'static [GovernanceStep]>,
    last: Option<GovernanceStep>,
    /// Bit `step as usize` for each step entered.
    entered: u16,
    /// When the current step was entered, while it is being timed.
    since: Option<Instant>,
}

impl Trail {
    pub fn of(tool: ToolKind) -> Self {
        Trail {
            declared: Some(declared(tool)),
            last: None,
            entered: 0,
            since: None,
        }
    }

    /// Whether the call belongs to a declared tool (drafts of other audited events have
    /// no trail).
    pub fn is_declared(&self) -> bool {
        self.declared.is_some()
    }

    /// The steps entered, in order.
    pub fn entered(&self) -> Vec<&'static str> {
        ORDER
            .iter()
            .filter(|s| self.entered & (1 << (**s as u16)) != 0)
            .map(|s| s.name())
            .collect()
    }

    /// Records that the call entered `step`. In debug builds, a step out of order or not
    /// declared for the tool fails the call loudly (a bug, never an input).
    pub fn enter(&mut self, step: GovernanceStep) {
        if let Some(declared) = self.declared {
            debug_assert!(
                declared.contains(&step),
                "step {} is not declared for this tool",
                step.name()
            );
            debug_assert!(
                self.last.is_none_or(|last| last <= step),
                "step {} entered after {}",
                step.name(),
                self.last.map_or("", GovernanceStep::name)
            );
        }
        if self.last == Some(step) && self.since.is_some() {
            return;
        }
        let now = Instant::now();
        self.stop_timing(now);
        self.last = Some(step);
        self.since = Some(now);
        self.entered |= 1 << (step as u16);
    }

    /// Stops timing the current step (the call waits outside governance, e.g. while its
    /// adapter chooses the response form, or has ended).
    pub fn pause(&mut self) {
        self.stop_timing(Instant::now());
    }

    fn stop_timing(&mut self, now: Instant) {
        if let (Some(step), Some(since)) = (self.last, self.since.take()) {
            crate::stages::record_step(step, now.duration_since(since));
        }
    }

    /// Whether the current step is being timed (entered and not paused).
    pub fn is_timing(&self) -> bool {
        self.since.is_some()
    }

    /// The last step entered.
    pub fn last(&self) -> Option<GovernanceStep> {
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::{declared, GovernanceStep, Trail};
    use crate::mcp::ToolKind;

    #[test]
    fn every_tool_declares_its_steps_in_order_from_identity_to_audit() {
        for tool in ToolKind::ALL {
            let steps = declared(tool);
            assert_eq!(steps.first(), Some(&GovernanceStep::Identity), "{tool:?}");
            assert_eq!(steps.last(), Some(&GovernanceStep::Audit), "{tool:?}");
            assert!(steps.contains(&GovernanceStep::AuditGate), "{tool:?}");
            assert!(steps.contains(&GovernanceStep::RateLimit), "{tool:?}");
            for pair in steps.windows(2) {
                assert!(pair[0] < pair[1], "{tool:?}: {pair:?}");
            }
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    fn a_step_out_of_order_is_caught() {
        let caught = std::panic::catch_unwind(|| {
            let mut trail = Trail::of(ToolKind::Query);
            trail.enter(GovernanceStep::Identity);
            trail.enter(GovernanceStep::RateLimit);
            trail.enter(GovernanceStep::Policy);
        });
        assert!(caught.is_err());
        let undeclared = std::panic::catch_unwind(|| {
            Trail::of(ToolKind::ListSources).enter(GovernanceStep::Cache);
        });
        assert!(undeclared.is_err());
        let mut fine = Trail::of(ToolKind::Query);
        for step in declared(ToolKind::Query) {
            fine.enter(*step);
            fine.enter(*step);
        }
        assert_eq!(fine.last(), Some(GovernanceStep::Audit));
        let names: Vec<&str> = declared(ToolKind::Query).iter().map(|s| s.name()).collect();
        assert_eq!(fine.entered(), names);
    }
}
