//! Where the control database is and how the gateway connects to it (`[control]`).

use serde::{Deserialize, Serialize};

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
    pub migrate_on_start: bool,
}
