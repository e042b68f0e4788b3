//! Integration tests of discovery on a real PostgreSQL (see `harness.rs`).

mod fixtures;
mod harness;

mod audience;
mod filters;
mod ingest;
mod ranking;
mod related;
mod store;
mod tables;
