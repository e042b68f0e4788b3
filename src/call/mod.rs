//! What a governed call is made of, shared by the two places that run one: the pipeline
//! (an agent's call) and the approval runner (an approved write). Below both, so neither
//! imports the other for it.
//!
//! - [`outcome`]: the typed outcome of a call, before any adapter renders it, and
//!   [`render`]: how MCP answers it;
//! - [`audit`]: the call's audit draft, turned into its canonical record at the end;
//! - [`steps`]: the governance steps each tool runs, and the trail a call leaves;
//! - [`mask`]: a decision's masks applied to a result, column by column;
//! - [`replay_basis`]: what a query's record keeps so its decision can be replayed;
//! - [`source_span`]: a statement's database client span, and the comment that carries its
//!   trace context to the source.

pub mod audit;
pub mod mask;
pub mod outcome;
pub mod render;
pub mod replay_basis;
pub mod source_span;
pub mod steps;
pub mod task_view;

pub use audit::AuditDraft;
pub use outcome::{HeldTask, Outcome};
pub use render::{render_governed, render_governed_legacy};
