//! Approvals: writes held for human approvers, decided through the admin API and executed
//! exactly once.
//!
//! - [`decide`]: an approver's decision, in one control-database transaction with the
//!   approval row locked (no self-approval, scoped approvers, distinct approvers, 409 for
//!   anything not pending);
//! - [`runner`]: claiming (`approved` → `executing` compare-and-set), re-checking grants and
//!   policy, running the write in a READ WRITE transaction, storing the outcome, invalidating
//!   the cache; plus expiry and recovery;
//! - [`withdraw`]: the requester withdraws its pending approval (it cancelled its MCP task);
//! - [`instance`]: the advisory lock that tells a live executor from a dead one;
//! - [`display`]: the statement as approvers see it, control characters escaped;
//! - [`preview`], [`images`], [`side_effects`]: what a queued write would do, shown to
//!   approvers, and the rows (by key) an imaged preview binds the execution to.

pub mod decide;
pub mod display;
pub mod images;
pub mod instance;
pub mod preview;
pub mod recheck;
pub mod runner;
pub mod side_effects;
pub mod withdraw;

pub use decide::{decide, DecideError, Desk};
pub use display::escape_for_display;
