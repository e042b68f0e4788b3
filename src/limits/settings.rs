//! Rate-limit settings (`[rate_limit]`): the default and write budgets, and where budgets
//! live.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSettings {
    pub default_per_second: f64,
    pub default_burst: u32,
    pub write_per_second: f64,
    pub write_burst: u32,
    /// Ignored: accepted so configuration files written for earlier versions still load
    /// (rate checks no longer queue in a mailbox).
    #[serde(default)]
    pub mailbox: usize,
    /// Where budgets live: this replica (`local`) or Redis, shared by the fleet (`redis`).
    pub backend: RateLimitBackend,
    /// `redis://host:port[/db]` when `backend = "redis"`.
    pub redis_url: String,
    /// What a check does when Redis does not answer.
    pub redis_unavailable: RedisUnavailable,
    /// How long a check waits for Redis before the fallback applies.
    pub redis_timeout_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RateLimitBackend {
    Local,
    Redis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RedisUnavailable {
    /// Local buckets with every budget divided by the live replica count.
    Divide,
    /// Refuse the call (503): fail closed.
    Refuse,
}

impl RedisUnavailable {
    pub fn as_str(self) -> &'static str {
        match self {
            RedisUnavailable::Divide => "divide",
            RedisUnavailable::Refuse => "refuse",
        }
    }
}
