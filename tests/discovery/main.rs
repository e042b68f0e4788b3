//! Integration tests of discovery on a real PostgreSQL (see `harness.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fixtures;
mod harness;

mod audience;
mod filters;
mod ingest;
mod ranking;
mod related;
mod store;
mod tables;
