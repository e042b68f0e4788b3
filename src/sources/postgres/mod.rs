//! PostgreSQL sources: connection settings, TLS, and (in later modules) pools, execution
//! and catalog scans.

pub mod affinity;
pub mod budget;
pub mod catalog_scan;
pub mod cause;
pub mod changes;
pub mod connect;
pub mod exec_error;
pub mod execute;
mod flight;
pub mod guarded_connect;
pub mod pool;
pub mod relation_facts;
pub mod request;
pub mod row_guard;
pub mod row_keys;
pub mod rows;
pub mod session;
pub mod text_forms;
pub mod tls;
pub mod values;

pub use connect::{connect_once, probe, ConnectError, Probe};
