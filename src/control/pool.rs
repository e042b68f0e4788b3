//! The control-database connection pool.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::settings::ControlSettings;
use crate::secrets::SecretRef;

pub type ControlPool = Pool;

#[derive(Debug, thiserror::Error)]
pub enum PoolSetupError {
    #[error("control database password: {0}")]
    Secret(#[from] crate::secrets::SecretError),
    #[error("control database pool could not be built: {0}")]
    Build(String),
    #[error("control database TLS ([control] tls_mode, tls_ca_file): {0}")]
    Tls(#[from] crate::pg_tls::TlsSetupError),
}

/// Builds the pool. No connection is made until the first checkout.
pub fn connect_pool(settings: &ControlSettings) -> Result<ControlPool, PoolSetupError> {
    build(settings, settings.pool_size, "interlock-control", "")
}

/// How every audit writer's session runs besides what the control pool's do: with generic
/// plans only. The writer sends a few fixed statements whose plans do not depend on their
/// parameters, but PostgreSQL's choice goes by estimates that do: the seqs of a batch of
/// many (`generate_series(1, $1)`, 1,000 rows estimated generically, the batch's size once
/// bound) were planned anew at every batch, 3 % of the control database's CPU at 32
/// connections (BENCHMARKS.md, "The audit commit, seventh step").
const AUDIT_SESSION: &str = "-c plan_cache_mode=force_generic_plan";

/// Connections of the audit writer alone (one commits, one probes while the control
/// database is unreachable). Only the writer's thread checks them out, so each one's
/// connection task runs on that thread and a commit is one flight without a cross-thread
/// wake-up on either side (see `sources::postgres::affinity` for what one costs).
pub fn audit_pool(settings: &ControlSettings) -> Result<ControlPool, PoolSetupError> {
    build(settings, 2, "interlock-audit", AUDIT_SESSION)
}

/// Connections of an audit writer seated on an HTTP worker (`audit.writer_per_worker`),
/// its own as the supervised writer's are; named apart so that `audit_chains.writer` and
/// `pg_stat_activity` tell its chains and sessions from the supervised writer's.
pub fn worker_audit_pool(settings: &ControlSettings) -> Result<ControlPool, PoolSetupError> {
    build(settings, 2, "interlock-audit-worker", AUDIT_SESSION)
}

/// A connection of its own to the control database, outside any pool (the fleet channel's
/// `LISTEN`): where, as whom, and over which TLS.
#[derive(Clone)]
pub struct ControlConnect {
    pub config: tokio_postgres::Config,
    /// `None` for `tls_mode = "disable"`.
    pub tls: Option<MakeRustlsConnect>,
}

/// How to open a connection of its own to the control database, as `application_name`.
pub fn control_connect(
    settings: &ControlSettings,
    application_name: &str,
) -> Result<ControlConnect, PoolSetupError> {
    Ok(ControlConnect {
        config: connection_config(settings, application_name)?,
        tls: tls(settings)?,
    })
}

/// The TLS connector `[control]` asks for, or `None` for plain TCP.
fn tls(settings: &ControlSettings) -> Result<Option<MakeRustlsConnect>, PoolSetupError> {
    let ca = Some(settings.tls_ca_file.as_str()).filter(|f| !f.is_empty());
    Ok(crate::pg_tls::client_config(settings.tls_mode, ca)?.map(MakeRustlsConnect::new))
}

/// How to connect to the control database, as `application_name`.
pub fn connection_config(
    settings: &ControlSettings,
    application_name: &str,
) -> Result<tokio_postgres::Config, PoolSetupError> {
    let mut pg = tokio_postgres::Config::new();
    pg.host(&settings.host)
        .port(settings.port)
        .dbname(&settings.dbname)
        .user(&settings.user)
        .application_name(application_name)
        .connect_timeout(Duration::from_secs(settings.connect_timeout_secs));
    dead_peer_detection(&mut pg, settings.dead_peer_timeout_secs);
    let password =
        SecretRef::from_parts(&settings.password_env, &settings.password_file).resolve()?;
    if let Some(p) = password {
        pg.password(p);
    }
    Ok(pg)
}

/// A connection whose peer goes silent fails within about `secs`, on both ends:
/// [`dead_peer_socket`] on this end, [`dead_peer_session_options`] on the server's.
pub fn dead_peer_detection(pg: &mut tokio_postgres::Config, secs: u64) {
    dead_peer_socket(pg, secs);
    pg.options(dead_peer_session_options(secs));
}

/// This end of the connection: keepalive probes start after half of `secs` on an idle
/// connection (one a second, the rest of it in count), and data left unacknowledged that
/// long fails the socket (`TCP_USER_TIMEOUT`). A long query sends nothing and is answered
/// by the server's kernel meanwhile, so neither ever cuts a slow statement short.
pub fn dead_peer_socket(pg: &mut tokio_postgres::Config, secs: u64) {
    let Probes { secs, idle, count } = Probes::within(secs);
    pg.keepalives(true)
        .keepalives_idle(Duration::from_secs(idle))
        .keepalives_interval(Duration::from_secs(1))
        .keepalives_retries(u32::try_from(count).unwrap_or(u32::MAX))
        .tcp_user_timeout(Duration::from_secs(secs));
}

/// The server's end, as session options: its backend for a vanished client ends too, and
/// releases what the session held (advisory locks such as the instance lock, row locks of an
/// open transaction) instead of keeping them for TCP's default two hours.
pub fn dead_peer_session_options(secs: u64) -> String {
    let Probes { secs, idle, count } = Probes::within(secs);
    format!(
        "-c tcp_keepalives_idle={idle} -c tcp_keepalives_interval=1 \
         -c tcp_keepalives_count={count} -c tcp_user_timeout={}",
        secs * 1000
    )
}

/// One plan of keepalive probes for both ends: idle for half the time, then one probe a
/// second for the rest, the whole within `secs` (at least 2).
struct Probes {
    secs: u64,
    idle: u64,
    count: u64,
}

impl Probes {
    fn within(secs: u64) -> Self {
        let secs = secs.max(2);
        Probes {
            secs,
            idle: secs / 2,
            count: secs - secs / 2,
        }
    }
}

/// A pool of `size` connections as `application_name`, their sessions started with
/// `session` (server options, `-c name=value …`) besides the control pool's.
fn build(
    settings: &ControlSettings,
    size: usize,
    application_name: &str,
    session: &str,
) -> Result<ControlPool, PoolSetupError> {
    let mut pg = connection_config(settings, application_name)?;
    if !session.is_empty() {
        let options = format!("{} {session}", pg.get_options().unwrap_or_default());
        pg.options(options);
    }
    let config = || ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    let manager = match tls(settings)? {
        Some(tls) => Manager::from_config(pg, tls, config()),
        None => Manager::from_config(pg, tokio_postgres::NoTls, config()),
    };
    let timeout = Some(Duration::from_secs(settings.connect_timeout_secs));
    Pool::builder(manager)
        .max_size(size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(timeout)
        .create_timeout(timeout)
        .recycle_timeout(timeout)
        .build()
        .map_err(|e| PoolSetupError::Build(e.to_string()))
}
