//! InterLock's actors and the request scope they share with the gateway.
//!
//! This crate knows nothing of actix-web. Each actor lives behind a small Handle type so the
//! gateway never names actix types, is started explicitly at start-up under the gateway's
//! [`supervise::Supervision`] (which restarts it when it panics, stops or stalls), has a
//! bounded mailbox, and never panics itself. Every `send` is bounded by a timeout;
//! load-proportional paths never use `do_send`.
#![forbid(unsafe_code)]

pub mod approval;
pub mod audit;
pub mod breaker;
pub mod cache;
pub mod events;
pub mod ratelimit;
pub mod scope;
pub mod supervise;

pub use scope::RequestScope;

/// Failures of the actor machinery itself (not decisions).
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ActorError {
    #[error("circuit open")]
    CircuitOpen,
    #[error("{0}")]
    Mailbox(String),
    #[error("invalid actor configuration: {0}")]
    Config(String),
}
