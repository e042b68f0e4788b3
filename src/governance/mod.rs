//! Governance: who may do what (access), how values are masked (redaction),
//! and the single decision entry point that runs every step in order.

pub mod access;
mod authorize;
pub mod condition;
pub mod cost;
pub mod decision;
pub mod describe;
pub mod effect;
pub mod pattern;
pub mod policy;
pub mod redaction;
pub mod scan_mask;
pub mod verdict;

pub use access::{
    evaluate, is_allowed, AccessDecision, AccessProfile, AccessRequest, AccessStatement, Action,
    Effect, Policy, PolicyRule, ResourcePattern, Rule, RuleMode, RuleOrigin, SourceRole,
};
pub use decision::{
    decide, decide_remembering, Allowed, AllowedClass, Decision, OutputColumn, Refusal, SqlLimits,
    Step, Verdict,
};
pub use describe::{readable_columns, ReadableColumn, ReadableRelation};
pub use redaction::{apply, MaskStrategy, RedactionRule};
