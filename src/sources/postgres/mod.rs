//! PostgreSQL sources: connection settings, TLS, and (in later modules) pools, execution
//! and catalog scans.

pub mod connect;
pub mod tls;

pub use connect::{connect_once, probe, ConnectError, Probe};
