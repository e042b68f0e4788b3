//! InterLock: a governed MCP gateway between AI agents and company data.
//!
//! [`Gateway::start`] builds the whole application from a [`Settings`] value; `main`, the
//! `dev` demo and the integration tests all use it, so they run the same code.
#![forbid(unsafe_op_in_unsafe_fn)]

pub mod approvals;
pub mod cli;
pub mod client;
pub mod config;
pub mod control;
pub mod demo;
pub mod discovery;
pub mod fleet;
pub mod governance;
pub mod http;
pub mod limits;
pub mod mcp;
pub mod oauth;
pub mod pgcluster;
pub mod pipeline;
pub mod secrets;
pub mod sources;
pub mod sql;
pub mod stages;
pub mod stdio;
pub mod telemetry;
pub mod webhooks;

mod allocator;
mod gateway;

pub use config::Settings;
pub use gateway::{AppState, Gateway, StartError};

/// The gateway's version, as reported in health checks and MCP server info.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
