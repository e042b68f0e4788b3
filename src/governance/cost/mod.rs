//! Cost-based admission: what a policy bounds in the planner's estimate of a read
//! ([`limits`]), the estimate read from PostgreSQL's `EXPLAIN (FORMAT JSON, VERBOSE)`
//! ([`plan`]), and what an agent is shown when a read is over a limit ([`summary`]).
//!
//! Everything here is pure: the pipeline plans the statement on the source as the caller and
//! hands the plan in; nothing in this module talks to a database.

pub mod limits;
pub mod plan;
pub mod summary;

pub use limits::{Admission, CostApprovals, CostLimit, CostLimits, CostMeasure, OnExceed};
pub use plan::{PlanEstimate, PlanNode};
pub use summary::{RelationFacts, Summary};
