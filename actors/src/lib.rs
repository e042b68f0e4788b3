//! InterLock's actors and the request scope they share with the gateway.
//!
//! This crate knows nothing of actix-web. Each actor lives behind a small Handle type so the
//! gateway never names actix types, is started explicitly at start-up, and never panics.
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod scope;

pub use scope::RequestScope;
