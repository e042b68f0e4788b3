//! Typed settings, loaded with the `config` crate.
//!
//! Layers, later wins: `config/default.toml` (compiled in), an optional file, then
//! `INTERLOCK__SECTION__KEY` environment variables. Unknown keys are rejected so a typo
//! cannot silently fall back to a default, and [`Settings::validate`] names the key of every
//! value it refuses.

use std::net::SocketAddr;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::control::ControlSettings;
pub use crate::limits::{RateLimitBackend, RateLimitSettings, RedisUnavailable};
pub use crate::telemetry::{LogFormat, LogSettings, LogStream};

/// The defaults, compiled in so the binary never depends on the working directory.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration could not be loaded: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid configuration: `{key}`: {problem}")]
    Invalid { key: &'static str, problem: String },
}

impl From<crate::oauth::settings::InvalidSetting> for ConfigError {
    fn from(e: crate::oauth::settings::InvalidSetting) -> Self {
        ConfigError::Invalid {
            key: e.key,
            problem: e.problem,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub server: ServerSettings,
    pub control: ControlSettings,
    pub log: LogSettings,
    pub sql: SqlSettings,
    pub identity: IdentitySettings,
    pub rate_limit: RateLimitSettings,
    pub breaker: BreakerSettings,
    pub cache: CacheSettings,
    pub audit: AuditSettings,
    pub catalog: CatalogSettings,
    pub sources: SourcesSettings,
    pub approvals: ApprovalSettings,
    pub tasks: crate::mcp::tasks::TaskSettings,
    pub metrics: MetricsSettings,
    pub actors: ActorSettings,
    pub fleet: FleetSettings,
    pub webhooks: WebhookSettings,
    pub policy: PolicySettings,
    pub oauth: crate::oauth::settings::OAuthSettings,
    pub telemetry: crate::telemetry::traces::TelemetrySettings,
    pub activity: crate::activity::ActivitySettings,
}

/// Policy conditions (see `governance::condition`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySettings {
    /// The IANA zone `request.hour`, `request.weekday` and `request.date` are read in.
    pub time_zone: String,
}

/// Signed notifications to operators' endpoints (see `webhooks`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookSettings {
    /// Allow endpoints on loopback and private addresses (refused by default).
    pub allow_private: bool,
    /// The console's address as its users reach it, for links in Slack messages (empty: no
    /// link).
    pub console_url: String,
}

/// Replicas sharing one control database (see `fleet`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FleetSettings {
    pub reconcile_interval_ms: u64,
    pub degraded_cache_ttl_ms: u64,
}

impl FleetSettings {
    pub fn config(&self) -> crate::fleet::FleetConfig {
        crate::fleet::FleetConfig {
            reconcile_every: std::time::Duration::from_millis(self.reconcile_interval_ms),
            degraded_cache_ttl: std::time::Duration::from_millis(self.degraded_cache_ttl_ms),
        }
    }
}

/// Supervision of the actors (see `interlock_actors::supervise`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ActorSettings {
    pub heartbeat_interval_ms: u64,
    pub stall_after_ms: u64,
    pub restart_backoff_min_ms: u64,
    pub restart_backoff_max_ms: u64,
}

impl ActorSettings {
    /// The supervision timing these settings describe.
    pub fn config(&self) -> interlock_actors::supervise::SupervisionConfig {
        use std::time::Duration;
        interlock_actors::supervise::SupervisionConfig {
            heartbeat_every: Duration::from_millis(self.heartbeat_interval_ms),
            stall_after: Duration::from_millis(self.stall_after_ms),
            backoff_min: Duration::from_millis(self.restart_backoff_min_ms),
            backoff_max: Duration::from_millis(self.restart_backoff_max_ms),
        }
    }
}

/// Where `/metrics` is served and who may read it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSettings {
    /// Empty: `/metrics` on the main listener, for operator keys only. An address: a
    /// second listener that serves only `/metrics`, without a key.
    pub listen: String,
    /// Allow `listen` to be a non-loopback address (anyone who reaches it reads metrics).
    pub allow_non_loopback: bool,
}

impl MetricsSettings {
    /// The separate metrics listener, when one is configured.
    pub fn listen_addr(&self) -> Option<SocketAddr> {
        self.listen.trim().parse().ok()
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    pub listen: String,
    pub workers: usize,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    /// Proxies (addresses or CIDR blocks) whose forwarding headers are believed.
    pub trusted_proxies: Vec<String>,
    pub max_body_bytes: usize,
    pub max_in_flight: usize,
    pub client_request_timeout_secs: u64,
    pub shutdown_timeout_secs: u64,
}

impl ServerSettings {
    /// HTTP worker threads: `workers`, or one per CPU core when it is 0.
    pub fn worker_count(&self) -> usize {
        if self.workers == 0 {
            std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
        } else {
            self.workers
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SqlSettings {
    pub max_sql_bytes: usize,
    /// Deepest statement nesting accepted (`crate::sql::depth`).
    pub max_depth: usize,
    /// Most FROM items one statement may name.
    pub max_relations: usize,
    /// Bound on what each source's decision memo holds, in bytes (0: off).
    pub decision_memo_bytes: u64,
}

impl SqlSettings {
    /// The bounds every SQL decision applies.
    pub fn limits(&self) -> crate::governance::SqlLimits {
        crate::governance::SqlLimits {
            max_sql_bytes: self.max_sql_bytes,
            max_depth: self.max_depth,
            max_relations: self.max_relations,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IdentitySettings {
    pub cache_ttl_ms: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerSettings {
    pub window_secs: u64,
    pub min_calls: u32,
    pub failure_rate: f64,
    pub open_secs: u64,
    pub half_open_probes: u32,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSettings {
    pub max_entries: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AuditSettings {
    pub max_batch: usize,
    /// Each HTTP worker commits its own callers' records, on its own thread, in a chain of
    /// its own (up to two more control connections per worker); false: one writer for all.
    pub writer_per_worker: bool,
    pub commit_timeout_ms: u64,
    /// Window over which refusals without a known caller are aggregated per peer and code.
    pub refusal_window_ms: u64,
    /// The checkpoint signing key's file (signed-note signer key); empty: no checkpoints.
    pub checkpoint_key_file: String,
    /// Seconds between automatic checkpoints; 0: only on demand.
    pub checkpoint_interval_secs: u64,
    /// An RFC 3161 timestamp authority each checkpoint is sent to; empty: none.
    pub timestamp_url: String,
    /// How long one timestamp request may take, in milliseconds.
    pub timestamp_timeout_ms: u64,
    /// A file every signed checkpoint is appended to (JSON lines); empty: none.
    pub witness_file: String,
    /// Records per partition of the audit log.
    pub partition_records: i64,
    /// Seconds between maintenance rounds (partitions ahead, archiving); 0: none.
    pub maintenance_interval_secs: u64,
    /// Where closed partitions are archived; empty: they stay in the control database.
    pub archive_dir: String,
    /// Days a closed partition's records stay in the control database before it is
    /// archived (with `archive_dir`); 0: archive only on demand.
    pub retain_days: u64,
}

impl AuditSettings {
    /// The maintenance loop these settings describe: scheduled archiving needs an archive
    /// directory, a retention period and the checkpoint key its segments are signed with.
    pub fn maintenance(
        &self,
        key: Option<std::sync::Arc<crate::ledger::CheckpointKey>>,
    ) -> Result<crate::retention::Maintenance, String> {
        if self.partition_records < 1 {
            return Err(format!(
                "audit.partition_records must be at least 1 (is {})",
                self.partition_records
            ));
        }
        let dir = self.archive_dir.trim();
        let archive =
            match (dir.is_empty(), self.retain_days, key) {
                (true, _, _) | (false, 0, _) => None,
                (false, _, None) => return Err(
                    "audit.archive_dir with audit.retain_days needs audit.checkpoint_key_file: \
                     an archived segment is proven by a signed checkpoint"
                        .into(),
                ),
                (false, days, Some(key)) => Some(crate::retention::Archiving {
                    dir: std::path::PathBuf::from(dir),
                    retain: chrono::Duration::days(
                        i64::try_from(days).unwrap_or(i64::MAX / 86_400_000),
                    ),
                    key,
                }),
            };
        Ok(crate::retention::Maintenance {
            partition_records: self.partition_records,
            archive,
            every: std::time::Duration::from_secs(self.maintenance_interval_secs),
        })
    }

    /// The checkpoint signing key, if `checkpoint_key_file` names one.
    pub fn checkpoint_key(&self) -> Result<Option<crate::ledger::CheckpointKey>, String> {
        if self.checkpoint_key_file.trim().is_empty() {
            return Ok(None);
        }
        let path = self.checkpoint_key_file.trim();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("audit.checkpoint_key_file {path}: {e}"))?;
        crate::ledger::CheckpointKey::parse(&text)
            .map(Some)
            .map_err(|e| format!("audit.checkpoint_key_file {path}: {e}"))
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogSettings {
    pub max_relations: usize,
    pub refresh_interval_secs: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SourcesSettings {
    pub refresh_interval_ms: u64,
    /// Result memory all calls together may hold at once, in bytes (each reserves its
    /// source's byte cap while it runs).
    pub result_memory_budget_bytes: u64,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalSettings {
    pub sweep_interval_secs: u64,
    /// A dry-run preview's statement timeout, in milliseconds.
    pub preview_statement_timeout_ms: u32,
    /// A dry-run preview's lock timeout, in milliseconds.
    pub preview_lock_timeout_ms: u32,
}

impl ApprovalSettings {
    pub fn preview_timeouts(&self) -> crate::sources::postgres::execute::PreviewTimeouts {
        crate::sources::postgres::execute::PreviewTimeouts {
            statement_ms: self.preview_statement_timeout_ms,
            lock_ms: self.preview_lock_timeout_ms,
        }
    }
}

impl BreakerSettings {
    /// The breaker configuration these settings describe.
    pub fn config(&self) -> interlock_actors::breaker::BreakerConfig {
        interlock_actors::breaker::BreakerConfig {
            window: std::time::Duration::from_secs(self.window_secs),
            min_calls: self.min_calls,
            failure_rate: self.failure_rate,
            open_for: std::time::Duration::from_secs(self.open_secs),
            half_open_probes: self.half_open_probes,
        }
    }
}

impl Settings {
    /// Loads defaults, then `file` when given, then the process environment.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_with_env(file, std::env::vars())
    }

    /// As [`Settings::load`], with the environment given explicitly (tests use this so they
    /// never depend on, or change, the process environment).
    pub fn load_with_env(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder().add_source(config::File::from_str(
            DEFAULT_TOML,
            config::FileFormat::Toml,
        ));
        if let Some(path) = file {
            if !path.is_file() {
                return Err(ConfigError::Invalid {
                    key: "--config",
                    problem: format!("{} is not a readable file", path.display()),
                });
            }
            builder = builder.add_source(config::File::from(path).required(true));
        }
        let env: config::Map<String, String> = env
            .into_iter()
            .filter(|(k, _)| k.starts_with("INTERLOCK__"))
            .collect();
        builder = builder.add_source(
            config::Environment::with_prefix("INTERLOCK")
                .prefix_separator("__")
                .separator("__")
                .list_separator(",")
                .with_list_parse_key("server.allowed_hosts")
                .with_list_parse_key("server.allowed_origins")
                .with_list_parse_key("oauth.authorization_servers")
                .with_list_parse_key("oauth.algorithms")
                .try_parsing(true)
                .source(Some(env)),
        );
        let settings: Settings = builder.build()?.try_deserialize()?;
        settings.validate()?;
        Ok(settings)
    }

    /// Checks values the types alone cannot, naming the offending key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        fn invalid(key: &'static str, problem: impl Into<String>) -> ConfigError {
            ConfigError::Invalid {
                key,
                problem: problem.into(),
            }
        }
        self.listen_addr()?;
        self.oauth.validate()?;
        self.telemetry
            .validate()
            .map_err(|e| invalid("telemetry", e.to_string()))?;
        if self.policy.time_zone.parse::<chrono_tz::Tz>().is_err() {
            return Err(invalid(
                "policy.time_zone",
                format!(
                    "{:?} is not an IANA time zone (e.g. UTC, Europe/Berlin)",
                    self.policy.time_zone
                ),
            ));
        }
        if self.server.max_body_bytes < 1024 {
            return Err(invalid(
                "server.max_body_bytes",
                "must be at least 1024 bytes",
            ));
        }
        if self.server.max_in_flight == 0 {
            return Err(invalid("server.max_in_flight", "must be at least 1"));
        }
        if self.tasks.poll_interval_ms == 0 {
            return Err(invalid("tasks.poll_interval_ms", "must be at least 1"));
        }
        if self.tasks.default_ttl_ms > self.tasks.max_ttl_ms {
            return Err(invalid(
                "tasks.default_ttl_ms",
                format!(
                    "must not exceed tasks.max_ttl_ms ({})",
                    self.tasks.max_ttl_ms
                ),
            ));
        }
        if self.server.client_request_timeout_secs == 0 {
            return Err(invalid(
                "server.client_request_timeout_secs",
                "must be at least 1",
            ));
        }
        if self.control.host.trim().is_empty() {
            return Err(invalid("control.host", "must not be empty"));
        }
        if self.control.port == 0 {
            return Err(invalid("control.port", "must be between 1 and 65535"));
        }
        if self.control.dbname.trim().is_empty() {
            return Err(invalid("control.dbname", "must not be empty"));
        }
        if self.control.user.trim().is_empty() {
            return Err(invalid("control.user", "must not be empty"));
        }
        if !self.control.password_env.is_empty() && !self.control.password_file.is_empty() {
            return Err(invalid(
                "control.password_env",
                "set either control.password_env or control.password_file, not both",
            ));
        }
        if self.control.pool_size == 0 {
            return Err(invalid("control.pool_size", "must be at least 1"));
        }
        if self.control.connect_timeout_secs == 0 {
            return Err(invalid(
                "control.connect_timeout_secs",
                "must be at least 1",
            ));
        }
        if self.control.dead_peer_timeout_secs < 2 {
            return Err(invalid(
                "control.dead_peer_timeout_secs",
                "must be at least 2",
            ));
        }
        if tracing_subscriber::EnvFilter::try_new(&self.log.level).is_err() {
            return Err(invalid(
                "log.level",
                format!(
                    "{:?} is not a valid filter (try \"info\" or \"interlock=debug\")",
                    self.log.level
                ),
            ));
        }
        if !(256..=16 * 1024 * 1024).contains(&self.sql.max_sql_bytes) {
            return Err(invalid(
                "sql.max_sql_bytes",
                "must be between 256 and 16777216",
            ));
        }
        if let Some(bad) = self
            .server
            .trusted_proxies
            .iter()
            .find(|p| crate::cidr::IpNet::parse(p).is_none())
        {
            return Err(invalid(
                "server.trusted_proxies",
                format!("{bad:?} is not an IP address or CIDR block (e.g. \"10.0.0.0/8\")"),
            ));
        }
        if !self.metrics.listen.trim().is_empty() {
            match self.metrics.listen_addr() {
                None => {
                    return Err(invalid(
                        "metrics.listen",
                        "must be empty or an address such as \"127.0.0.1:9464\"",
                    ))
                }
                Some(a) if !a.ip().is_loopback() && !self.metrics.allow_non_loopback => {
                    return Err(invalid(
                        "metrics.listen",
                        "must be a loopback address unless metrics.allow_non_loopback = true",
                    ))
                }
                Some(_) => {}
            }
        }
        if self.sources.result_memory_budget_bytes < 1024 * 1024 {
            return Err(invalid(
                "sources.result_memory_budget_bytes",
                "must be at least 1048576 (1 MiB)",
            ));
        }
        if !(100..=60_000).contains(&self.audit.refusal_window_ms) {
            return Err(invalid(
                "audit.refusal_window_ms",
                "must be between 100 and 60000",
            ));
        }
        if !(10..=crate::sql::depth::DEFAULT_MAX_DEPTH).contains(&self.sql.max_depth) {
            return Err(invalid(
                "sql.max_depth",
                format!(
                    "must be between 10 and {}",
                    crate::sql::depth::DEFAULT_MAX_DEPTH
                ),
            ));
        }
        if !(1..=1000).contains(&self.sql.max_relations) {
            return Err(invalid("sql.max_relations", "must be between 1 and 1000"));
        }
        if !(100..=60_000).contains(&self.identity.cache_ttl_ms) {
            return Err(invalid(
                "identity.cache_ttl_ms",
                "must be between 100 and 60000",
            ));
        }
        let r = &self.rate_limit;
        for (key, v) in [
            ("rate_limit.default_per_second", r.default_per_second),
            ("rate_limit.write_per_second", r.write_per_second),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(key, "must be a number greater than zero"));
            }
        }
        if r.default_burst == 0 || r.write_burst == 0 {
            return Err(invalid(
                "rate_limit.default_burst",
                "bursts must be at least 1",
            ));
        }
        if let Err(problem) = self.breaker.config().validate() {
            let key = if problem.starts_with("window") {
                "breaker.window_secs"
            } else if problem.starts_with("min_calls") {
                "breaker.min_calls"
            } else if problem.starts_with("failure_rate") {
                "breaker.failure_rate"
            } else {
                "breaker.half_open_probes"
            };
            return Err(invalid(key, problem));
        }
        // An empty URL is refused at start-up (`interlock dev` fills it with a private
        // redis-server first).
        if r.backend == RateLimitBackend::Redis && !r.redis_url.is_empty() {
            if !(r.redis_url.starts_with("redis://") || r.redis_url.starts_with("rediss://")) {
                return Err(invalid(
                    "rate_limit.redis_url",
                    "must be a redis:// or rediss:// URL when rate_limit.backend = \"redis\"",
                ));
            }
            if r.redis_timeout_ms == 0 {
                return Err(invalid("rate_limit.redis_timeout_ms", "must be at least 1"));
            }
        }
        if self.fleet.reconcile_interval_ms < 100 {
            return Err(invalid(
                "fleet.reconcile_interval_ms",
                "must be at least 100",
            ));
        }
        if self.fleet.degraded_cache_ttl_ms == 0 {
            return Err(invalid("fleet.degraded_cache_ttl_ms", "must be at least 1"));
        }
        let a = &self.actors;
        if a.heartbeat_interval_ms < 10 {
            return Err(invalid(
                "actors.heartbeat_interval_ms",
                "must be at least 10",
            ));
        }
        if a.stall_after_ms < 100 {
            return Err(invalid("actors.stall_after_ms", "must be at least 100"));
        }
        if a.restart_backoff_min_ms == 0 || a.restart_backoff_max_ms < a.restart_backoff_min_ms {
            return Err(invalid(
                "actors.restart_backoff_max_ms",
                "the backoffs must be at least 1 ms, the max no smaller than the min",
            ));
        }
        if self.audit.max_batch == 0 {
            return Err(invalid("audit.max_batch", "must be at least 1"));
        }
        if self.audit.commit_timeout_ms < 100 {
            return Err(invalid("audit.commit_timeout_ms", "must be at least 100"));
        }
        if self.catalog.max_relations == 0 {
            return Err(invalid("catalog.max_relations", "must be at least 1"));
        }
        if self.approvals.preview_statement_timeout_ms == 0
            || self.approvals.preview_lock_timeout_ms == 0
        {
            return Err(invalid(
                "approvals.preview_statement_timeout_ms",
                "the preview timeouts must be at least 1 ms (0 would mean no timeout)",
            ));
        }
        if self.approvals.sweep_interval_secs == 0 {
            return Err(invalid(
                "approvals.sweep_interval_secs",
                "must be at least 1",
            ));
        }
        if self.sources.refresh_interval_ms < 100 {
            return Err(invalid(
                "sources.refresh_interval_ms",
                "must be at least 100",
            ));
        }
        Ok(())
    }

    /// The parsed `server.listen` address.
    pub fn listen_addr(&self) -> Result<SocketAddr, ConfigError> {
        self.server
            .listen
            .parse()
            .map_err(|_| ConfigError::Invalid {
                key: "server.listen",
                problem: format!(
                    "{:?} is not an IP address and port such as 127.0.0.1:8080",
                    self.server.listen
                ),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_load_and_validate() {
        let s = Settings::load_with_env(None, env(&[])).expect("defaults are valid");
        assert_eq!(s.server.listen, "127.0.0.1:8080");
        assert_eq!(s.sql.max_sql_bytes, 65536);
        assert_eq!(s.identity.cache_ttl_ms, 5000);
    }

    #[test]
    fn environment_overrides_and_lists() {
        let s = Settings::load_with_env(
            None,
            env(&[
                ("INTERLOCK__SERVER__LISTEN", "127.0.0.1:9999"),
                ("INTERLOCK__SERVER__ALLOWED_HOSTS", "gw.internal,gw.example"),
                ("INTERLOCK__CONTROL__PORT", "6543"),
                ("INTERLOCK_API_KEY", "ignored: single underscore"),
            ]),
        )
        .expect("valid");
        assert_eq!(s.server.listen, "127.0.0.1:9999");
        assert_eq!(s.server.allowed_hosts, vec!["gw.internal", "gw.example"]);
        assert_eq!(s.control.port, 6543);
        let s = Settings::load_with_env(
            None,
            env(&[
                ("INTERLOCK__RATE_LIMIT__BACKEND", "redis"),
                ("INTERLOCK__RATE_LIMIT__REDIS_URL", "redis://127.0.0.1:6379"),
                ("INTERLOCK__RATE_LIMIT__REDIS_UNAVAILABLE", "refuse"),
            ]),
        )
        .expect("valid");
        assert_eq!(s.rate_limit.backend, RateLimitBackend::Redis);
        assert_eq!(s.rate_limit.redis_url, "redis://127.0.0.1:6379");
        assert_eq!(s.rate_limit.redis_unavailable, RedisUnavailable::Refuse);
    }

    #[test]
    fn invalid_values_name_their_key() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[("INTERLOCK__SERVER__LISTEN", "localhost")],
                "server.listen",
            ),
            (&[("INTERLOCK__CONTROL__PORT", "seventy")], "port"),
            (
                &[("INTERLOCK__CONTROL__POOL_SIZE", "0")],
                "control.pool_size",
            ),
            (&[("INTERLOCK__LOG__FORMAT", "xml")], "format"),
            (
                &[("INTERLOCK__SQL__MAX_SQL_BYTES", "10")],
                "sql.max_sql_bytes",
            ),
            (&[("INTERLOCK__SERVER__NO_SUCH_KEY", "1")], "no_such_key"),
            (
                &[("INTERLOCK__RATE_LIMIT__BACKEND", "memcached")],
                "backend",
            ),
            (
                &[
                    ("INTERLOCK__RATE_LIMIT__BACKEND", "redis"),
                    ("INTERLOCK__RATE_LIMIT__REDIS_URL", "http://127.0.0.1:6379"),
                ],
                "rate_limit.redis_url",
            ),
            (
                &[("INTERLOCK__FLEET__RECONCILE_INTERVAL_MS", "5")],
                "fleet.reconcile_interval_ms",
            ),
            (
                &[("INTERLOCK__ACTORS__STALL_AFTER_MS", "5")],
                "actors.stall_after_ms",
            ),
            (
                &[
                    ("INTERLOCK__CONTROL__PASSWORD_ENV", "A"),
                    ("INTERLOCK__CONTROL__PASSWORD_FILE", "/x"),
                ],
                "control.password_env",
            ),
        ];
        for (vars, key) in cases {
            let err = Settings::load_with_env(None, env(vars)).expect_err("must be refused");
            assert!(
                err.to_string().contains(key),
                "error for {vars:?} should name {key}: {err}"
            );
        }
    }

    #[test]
    fn a_file_layers_over_defaults() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.toml");
        std::fs::write(&path, "[server]\nlisten = \"127.0.0.1:7000\"\n").expect("write");
        let s = Settings::load_with_env(Some(&path), env(&[])).expect("valid");
        assert_eq!(s.server.listen, "127.0.0.1:7000");
        assert_eq!(s.control.dbname, "interlock");
        let missing = Settings::load_with_env(Some(&dir.path().join("nope.toml")), env(&[]));
        assert!(missing.is_err());
    }
}
