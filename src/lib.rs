//! InterLock: a governed MCP gateway between AI agents and company data.
//!
//! [`Gateway::start`] builds the whole application from a [`Settings`] value; `main`, the
//! `dev` demo and the integration tests all use it, so they run the same code.
//!
//! # Layers
//!
//! The modules read from the bottom up: each layer imports only the layers below it (and,
//! without a circle, modules of its own layer). A lower layer that must tell a higher one
//! something takes a trait or a channel the higher one implements (the fleet's notices
//! reach the access caches through `fleet::AccessCaches`, a governed call reaches the running
//! gateway through `pipeline::Ports`). `tests/module_layers.rs` reads this list and fails on
//! an import that runs uphill or on a circle, between modules or between folders.
//!
//! 1. foundations, which know nothing of the rest: `sql` (parse, classify, resolve),
//!    `governance` (access, policy, redaction, the SQL decision), `mcp` (the protocol,
//!    transport-agnostic), `stages` (the steps of a call, timed), `cidr`, `secrets`,
//!    `telemetry` (logs, the metrics recorder), `allocator`, `ledger` (the audit log's
//!    Merkle tree, signed checkpoints and proofs), `pg_tls` (TLS to PostgreSQL), `causes`
//!    (an error with its causes in one line)
//! 2. the control database's repositories: `control`, `discovery` (the document index)
//! 3. infrastructure adapters, each owning its settings: `sources` (connectors), `oauth`
//!    (token verification), `webhooks`, `pgcluster`, `fleet` (the replicas' channel),
//!    `limits` (rate limits, local or shared), `anchoring` (audit checkpoints on a schedule,
//!    RFC 3161 timestamps), `retention` (the audit log's partitions, archived to verified
//!    segment files), `activity` (the calls' minutes, for the console's charts)
//! 4. what a governed call is made of, shared by its two runners: `call` (outcome, audit
//!    draft, steps, masks)
//! 5. the governed call: `pipeline` (an agent's call, step by step), `approvals` (queued
//!    writes: decide, preview, run exactly once), `policy_lab` (policy tried before it
//!    bites: recorded calls replayed, one call explained), `tasks` (MCP tasks: a held
//!    call's task is its approval, served to its requester alone)
//! 6. the settings, composed from every module's own: `config`
//! 7. the running gateway's shared state: `state`
//! 8. adapters at the edge: `http` (the only place that knows actix-web's server), `stdio`,
//!    `client` (the bundled MCP client)
//! 9. composition: `gateway`, `demo`, `cli`
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod activity;
pub mod anchoring;
pub mod approvals;
pub mod call;
pub mod causes;
pub mod cidr;
pub mod cli;
pub mod client;
pub mod config;
pub mod control;
pub mod demo;
pub mod discovery;
pub mod fleet;
pub mod governance;
pub mod http;
pub mod ledger;
pub mod limits;
pub mod mcp;
pub mod oauth;
pub mod pg_tls;
pub mod pgcluster;
pub mod pipeline;
pub mod policy_lab;
pub mod retention;
pub mod secrets;
pub mod sources;
pub mod sql;
pub mod stages;
pub mod state;
pub mod stdio;
pub mod tasks;
pub mod telemetry;
pub mod webhooks;

mod allocator;
mod gateway;

pub use config::Settings;
pub use gateway::Gateway;
pub use state::{AppState, StartError};

/// The gateway's version, as reported in health checks and MCP server info.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
