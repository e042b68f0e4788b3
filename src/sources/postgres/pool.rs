//! Connection pools of one PostgreSQL source: a read pool whose sessions are pinned
//! read-only at connect time, and a write pool for approved writes.

use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, RecyclingMethod, Runtime};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::connect::{pg_config, ConnectError};
use super::session::{SessionManager, SessionObject, SessionPool};
use super::tls::{client_config, SourceTls};
use crate::control::sources::Source;

/// Why a source's pools could not be built from its settings.
#[derive(Debug, Clone)]
pub struct SettingsError {
    /// For operators (no secrets, no server text).
    pub message: String,
    /// The TLS settings are what is unusable (CA file, mode), as opposed to the login.
    pub tls: bool,
}

/// Room above the byte cap for a row's protocol framing (column lengths and the like).
pub const ROW_OVERHEAD: usize = 64 * 1024;

/// The pools of one source.
pub struct SourcePools {
    pub read: ReadPool,
    pub write: SessionPool,
    pub tls: SourceTls,
    /// Where cancel requests go (they carry the session's key, not a login).
    pub cancel_config: tokio_postgres::Config,
}

/// Which pool: the read pool pins `default_transaction_read_only=on`, so even a statement the
/// classifier misjudged cannot write through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Read,
    Write,
}

/// The read pool, in one share per HTTP worker thread ([`super::affinity`]): a thread
/// checks out only connections of its own share, whose connection tasks run on the
/// thread that opened them. The shares together hold at most the source's pool size
/// (rounded up to a multiple of the share count).
pub struct ReadPool {
    shares: Vec<SessionPool>,
}

impl ReadPool {
    /// A connection of the current thread's share.
    pub async fn get(&self) -> Result<SessionObject, deadpool_postgres::PoolError> {
        let share = super::affinity::share(self.shares.len());
        match self.shares.get(share).or(self.shares.first()) {
            Some(pool) => pool.get().await,
            None => Err(deadpool_postgres::PoolError::Closed),
        }
    }

    /// The shares' status, summed.
    pub fn status(&self) -> deadpool_postgres::Status {
        let mut total = deadpool_postgres::Status {
            max_size: 0,
            size: 0,
            available: 0,
            waiting: 0,
        };
        for s in self.shares.iter().map(SessionPool::status) {
            total.max_size += s.max_size;
            total.size += s.size;
            total.available += s.available;
            total.waiting += s.waiting;
        }
        total
    }
}

/// Builds the pools (connections are opened lazily, on first checkout); the read pool in
/// `threads` shares (the number of HTTP workers; never more shares than connections).
pub fn build(source: &Source, threads: usize) -> Result<SourcePools, ConnectError> {
    let tls = match client_config(source.tls_mode, source.tls_ca_file.as_deref())? {
        None => SourceTls::None,
        Some(cfg) => SourceTls::Rustls(MakeRustlsConnect::new(cfg)),
    };
    let read_login = source
        .read_login
        .as_ref()
        .ok_or_else(|| ConnectError::NoLogin(source.id.clone()))?;
    let write_login = source.write_login.as_ref().unwrap_or(read_login);
    let size = usize::try_from(source.pool_size).unwrap_or(8).max(1);
    let shares = threads.clamp(1, size);
    let per_share = size.div_ceil(shares);
    let read = ReadPool {
        shares: (0..shares)
            .map(|_| pool(source, read_login, Purpose::Read, &tls, per_share))
            .collect::<Result<_, _>>()?,
    };
    Ok(SourcePools {
        read,
        write: pool(source, write_login, Purpose::Write, &tls, size.clamp(1, 4))?,
        tls,
        cancel_config: pg_config(source, read_login)?,
    })
}

fn pool(
    source: &Source,
    login: &crate::control::sources::Login,
    purpose: Purpose,
    tls: &SourceTls,
    size: usize,
) -> Result<SessionPool, ConnectError> {
    let mut config = pg_config(source, login)?;
    if purpose == Purpose::Read {
        let options = format!(
            "{} -c default_transaction_read_only=on",
            config.get_options().unwrap_or_default()
        );
        config.options(options);
    }
    // The executor leaves a read session as it found it and resets a write session
    // (execute::release: RESET ALL keeps the pinned start-up options, UNLISTEN *, advisory
    // locks released, temp objects discarded) before the connection returns to the pool,
    // in the background; checkout only verifies the connection is open.
    let mc = ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    // Every connection is opened through the row guard: no single row over the source's
    // byte cap (plus the overhead of its encoding) is ever buffered.
    let row_limit = usize::try_from(source.max_bytes)
        .unwrap_or(usize::MAX)
        .saturating_add(ROW_OVERHEAD);
    let connect = super::guarded_connect::GuardedConnect {
        tls: tls.clone(),
        row_limit,
    };
    let manager = SessionManager::new(Manager::from_connect(config, connect, mc));
    SessionPool::builder(manager)
        .max_size(size)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(10)))
        .create_timeout(Some(Duration::from_secs(5)))
        .recycle_timeout(Some(Duration::from_secs(5)))
        .build()
        .map_err(|e| ConnectError::Upstream(format!("pool: {e}")))
}
