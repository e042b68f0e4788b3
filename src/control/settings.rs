//! Where the control database is and how the gateway connects to it (`[control]`).

use serde::{Deserialize, Serialize};

use crate::pg_tls::TlsMode;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ControlSettings {
    pub host: String,
    pub port: u16,
    pub dbname: String,
    pub user: String,
    pub password_env: String,
    pub password_file: String,
    pub pool_size: usize,
    pub connect_timeout_secs: u64,
    /// Seconds after which a control connection whose peer went silent (a partition, a
    /// host that vanished: no reset) is given up: TCP keepalives on idle connections and a
    /// TCP user timeout on unacknowledged data.
    pub dead_peer_timeout_secs: u64,
    /// TLS to the control database: `disable`, `require` (encrypted, not verified) or
    /// `verify-full` (chain verified against `tls_ca_file`, host name checked).
    pub tls_mode: TlsMode,
    /// PEM file of the CA(s) that sign the control database's certificate.
    pub tls_ca_file: String,
    pub migrate_on_start: bool,
    /// Longest wait of a migration's DDL for a table lock before it is rolled back and
    /// tried again (`SET LOCAL lock_timeout`).
    pub migration_lock_timeout_ms: u64,
    /// Tries of a migration whose locks were not free in time, before `migrate` gives up.
    pub migration_lock_attempts: u32,
}
