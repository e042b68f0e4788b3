//! Connecting to a PostgreSQL source with one of its logins.

use std::time::{Duration, Instant};

use serde::Serialize;
use tokio_postgres::config::SslMode;

use super::tls::{client_config, TlsSetupError};
use crate::control::pool::{dead_peer_session_options, dead_peer_socket};
use crate::control::sources::{Login, Source, TlsMode};

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("source {0} is not a PostgreSQL source")]
    NotPostgres(String),
    #[error("source {0} has no login configured")]
    NoLogin(String),
    #[error("password reference: {0}")]
    Secret(#[from] crate::secrets::SecretError),
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    #[error("upstream TLS refused")]
    TlsRefused,
    #[error("connection failed: {0}")]
    Upstream(String),
}

impl ConnectError {
    /// Whether TLS is what failed (its settings, or the server refusing the handshake).
    pub fn is_tls(&self) -> bool {
        matches!(self, ConnectError::Tls(_) | ConnectError::TlsRefused)
    }
}

/// The session settings every source connection pins at start-up, so agent SQL cannot
/// depend on (or change) them: see SQL-SAFETY.md §8.
pub fn session_options(source: &Source) -> String {
    let path = source
        .search_path
        .iter()
        .map(|s| format!("\"{}\"", s.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(",");
    format!(
        "-c search_path={} -c standard_conforming_strings=on -c statement_timeout={} -c lock_timeout={} \
         -c idle_in_transaction_session_timeout={}",
        path.replace(' ', "\\ "),
        source.statement_timeout_ms,
        source.statement_timeout_ms.min(5_000),
        source.statement_timeout_ms.saturating_mul(2),
    )
}

/// Seconds after which a source connection whose peer went silent (a partition: no reset)
/// is given up on both ends, instead of a call hanging until the network heals.
pub const DEAD_PEER_SECS: u64 = 10;

/// tokio-postgres configuration for `login` on `source`.
pub fn pg_config(source: &Source, login: &Login) -> Result<tokio_postgres::Config, ConnectError> {
    let (Some(host), Some(port), Some(dbname)) = (&source.host, source.port, &source.dbname) else {
        return Err(ConnectError::NotPostgres(source.id.clone()));
    };
    let mut c = tokio_postgres::Config::new();
    c.host(host)
        .port(port)
        .dbname(dbname)
        .user(&login.user)
        .application_name("interlock")
        .options(format!(
            "{} {}",
            session_options(source),
            dead_peer_session_options(DEAD_PEER_SECS)
        ))
        .connect_timeout(Duration::from_secs(5))
        .ssl_mode(match source.tls_mode {
            TlsMode::Disable => SslMode::Disable,
            TlsMode::Require | TlsMode::VerifyFull => SslMode::Require,
        });
    dead_peer_socket(&mut c, DEAD_PEER_SECS);
    if let Some(p) = login.password.resolve()? {
        c.password(p);
    }
    Ok(c)
}

/// Opens one connection and spawns its driver task on the current runtime.
pub async fn connect_once(
    source: &Source,
    login: &Login,
) -> Result<tokio_postgres::Client, ConnectError> {
    let config = pg_config(source, login)?;
    match client_config(source.tls_mode, source.tls_ca_file.as_deref())? {
        None => {
            let (client, conn) = config
                .connect(tokio_postgres::NoTls)
                .await
                .map_err(classify)?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(client)
        }
        Some(tls) => {
            let tls = tokio_postgres_rustls::MakeRustlsConnect::new(tls);
            let (client, conn) = config.connect(tls).await.map_err(classify)?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok(client)
        }
    }
}

/// Sorts connection failures into TLS refusals and other upstream failures (by the
/// driver's error types and SQLSTATE, see [`super::cause`]), without carrying addresses
/// or server text into the message.
fn classify(e: tokio_postgres::Error) -> ConnectError {
    use super::cause::{classify, Cause, Phase};
    match classify(&e, Phase::Connect) {
        Cause::Tls => ConnectError::TlsRefused,
        Cause::Connection(what) | Cause::ServerUnavailable(what) => {
            ConnectError::Upstream(what.to_string())
        }
        Cause::Statement { code } => ConnectError::Upstream(format!("SQLSTATE {code}")),
        Cause::Cancelled => ConnectError::Upstream("connection cancelled".to_string()),
        Cause::Driver => ConnectError::Upstream("could not connect".to_string()),
    }
}

/// What `interlock sources test` reports.
#[derive(Debug, Serialize)]
pub struct Probe {
    pub source: String,
    pub ok: bool,
    pub server_version: Option<String>,
    pub user: Option<String>,
    pub tls: &'static str,
    pub latency_ms: f64,
    pub error: Option<String>,
}

/// Connects with the read login and asks the server who it is.
pub async fn probe(source: &Source) -> Probe {
    let started = Instant::now();
    let result = async {
        let login = source
            .read_login
            .as_ref()
            .ok_or_else(|| ConnectError::NoLogin(source.id.clone()))?;
        let client = connect_once(source, login).await?;
        let row = client
            .query_one(
                "SELECT current_setting('server_version'), current_user::text",
                &[],
            )
            .await
            .map_err(classify)?;
        Ok::<_, ConnectError>((row.get::<_, String>(0), row.get::<_, String>(1)))
    }
    .await;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (ok, server_version, user, error) = match result {
        Ok((v, u)) => (true, Some(v), Some(u), None),
        Err(e) => (false, None, None, Some(e.to_string())),
    };
    Probe {
        source: source.id.clone(),
        ok,
        server_version,
        user,
        tls: source.tls_mode.as_str(),
        latency_ms,
        error,
    }
}
