//! A pooled source connection and who its session runs for.
//!
//! On a source that carries the caller's identity, a read runs with `interlock.identity`,
//! `interlock.roles` and (role mode) the mapped role set for its session. They are set only
//! when the connection's caller changes, so a connection that serves one caller after
//! another costs the source one statement per read, not a transaction of four; the pool
//! keeps, with each connection, whom its session was last set for.
//!
//! What keeps one caller's identity from the next:
//!
//! - the session is set before a read whenever its caller is not known to be the read's
//!   own, in a round trip of its own: the read is sent only once the settings are in place,
//!   so a setting that failed can never be followed by the read under the previous caller;
//! - the caller is forgotten (unknown) before the settings go out and remembered only once
//!   they succeeded, so a failed, cancelled or abandoned switch leaves the connection to be
//!   set again by its next read;
//! - a read for nobody (a source that carries no identity, or no longer does) resets the
//!   settings and the role first when the session may carry any;
//! - a new connection starts carrying nobody, and nothing a read may contain can change the
//!   settings itself (the classifier refuses `SET`, `RESET` and `set_config`).

use std::ops::{Deref, DerefMut};

use deadpool::managed::{Manager, Metrics, RecycleResult};
use tokio_postgres::types::Type;

use super::request::Caller;

/// Creates and recycles source connections as the driver's manager does, each with the
/// caller its session runs for.
pub struct SessionManager {
    inner: deadpool_postgres::Manager,
}

impl SessionManager {
    pub fn new(inner: deadpool_postgres::Manager) -> Self {
        SessionManager { inner }
    }
}

/// One source connection.
pub struct Session {
    client: deadpool_postgres::ClientWrapper,
    runs_for: RunsFor,
}

/// Whom a session's settings are set for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RunsFor {
    /// Not known for sure (a switch was sent and did not succeed): set it before any read.
    Unknown,
    /// Nobody: the settings and the role are the connection's start-up values.
    Nobody,
    Caller(Caller),
}

pub type SessionPool = deadpool::managed::Pool<SessionManager>;
pub type SessionObject = deadpool::managed::Object<SessionManager>;

impl Manager for SessionManager {
    type Type = Session;
    type Error = tokio_postgres::Error;

    async fn create(&self) -> Result<Session, tokio_postgres::Error> {
        Ok(Session {
            client: self.inner.create().await?,
            runs_for: RunsFor::Nobody,
        })
    }

    /// The driver's recycling, which only checks the connection is open (`Fast`: it leaves
    /// the session's settings as they are, so whom it runs for stays true).
    async fn recycle(
        &self,
        session: &mut Session,
        metrics: &Metrics,
    ) -> RecycleResult<tokio_postgres::Error> {
        self.inner.recycle(&mut session.client, metrics).await
    }

    fn detach(&self, session: &mut Session) {
        self.inner.detach(&mut session.client);
    }
}

impl Deref for Session {
    type Target = deadpool_postgres::ClientWrapper;

    fn deref(&self) -> &Self::Target {
        &self.client
    }
}

/// Writes take the client mutably (for their transaction); they run on the write pool, whose
/// sessions never carry a caller (writes set theirs transaction-local, and the session is
/// reset after each one).
impl DerefMut for Session {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.client
    }
}

/// Sets who the session runs for (`set_config` with `is_local` false is `SET`; `role` set
/// to `none` is `SET ROLE NONE`). One statement with typed parameters: no Parse round trip
/// of its own.
const RUN_AS: &str = "SELECT set_config('interlock.identity', $1, false), \
     set_config('interlock.roles', $2, false), set_config('role', $3, false)";

/// Back to the connection's start-up values.
const RUN_AS_NOBODY: &str = "RESET interlock.identity; RESET interlock.roles; RESET ROLE";

impl Session {
    /// Makes the session run for `caller` (`None`: for nobody), unless it already does.
    /// On an error the session's caller is unknown, and the next read sets it again.
    pub async fn run_as(&mut self, caller: Option<&Caller>) -> Result<(), tokio_postgres::Error> {
        let already = match (&self.runs_for, caller) {
            (RunsFor::Nobody, None) => true,
            (RunsFor::Caller(now), Some(wanted)) => now == wanted,
            _ => false,
        };
        if already {
            return Ok(());
        }
        self.runs_for = RunsFor::Unknown;
        match caller {
            Some(c) => {
                let role = c.pg_role.as_deref().unwrap_or("none");
                self.client
                    .query_typed(
                        RUN_AS,
                        &[
                            (&c.identity, Type::TEXT),
                            (&c.roles, Type::TEXT),
                            (&role, Type::TEXT),
                        ],
                    )
                    .await?;
            }
            None => self.client.batch_execute(RUN_AS_NOBODY).await?,
        }
        self.runs_for = match caller {
            Some(c) => RunsFor::Caller(c.clone()),
            None => RunsFor::Nobody,
        };
        Ok(())
    }
}
