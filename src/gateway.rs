//! Building and running the gateway from settings.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use actix_web::dev::ServerHandle;

use crate::config::Settings;
use crate::control::{self, ControlPool};

/// Shared state of a running gateway, handed to every request handler.
pub struct AppState {
    pub settings: Settings,
    pub control: ControlPool,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Pool(#[from] control::pool::PoolSetupError),
    #[error("applying control database migrations failed: {0}")]
    Migrate(control::ControlError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("invalid configuration: {0}")]
    Config(#[from] crate::config::ConfigError),
}

/// A gateway serving HTTP. Stop it with [`Gateway::stop`]; wait for it with
/// [`Gateway::wait`].
pub struct Gateway {
    addr: SocketAddr,
    handle: ServerHandle,
    server: Option<actix_web::dev::Server>,
    state: Arc<AppState>,
}

impl Gateway {
    /// Connects to the control database, applies migrations when configured, binds the
    /// listener and starts serving. Must run inside an actix system (`#[actix_web::main]`,
    /// `actix_rt::System`).
    pub async fn start(settings: Settings) -> Result<Self, StartError> {
        let listen = settings.listen_addr()?;
        let control = control::connect_pool(&settings.control)?;
        if settings.control.migrate_on_start {
            let applied = control::migrate::migrate(&control)
                .await
                .map_err(StartError::Migrate)?;
            if !applied.is_empty() {
                tracing::info!(?applied, "control database migrations applied");
            }
        }
        let listener = TcpListener::bind(listen).map_err(|source| StartError::Bind {
            addr: listen.to_string(),
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: listen.to_string(),
            source,
        })?;
        let state = Arc::new(AppState { settings, control });
        let server =
            crate::http::server(state.clone(), listener).map_err(|source| StartError::Bind {
                addr: addr.to_string(),
                source,
            })?;
        tracing::info!(%addr, "InterLock listening");
        Ok(Gateway {
            addr,
            handle: server.handle(),
            server: Some(server),
            state,
        })
    }

    /// The bound address (the real port when `server.listen` asked for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn state(&self) -> &Arc<AppState> {
        &self.state
    }

    /// Serves until the server stops: SIGINT/SIGTERM (handled by actix) or [`Gateway::stop`].
    pub async fn wait(mut self) -> std::io::Result<()> {
        match self.server.take() {
            Some(server) => server.await,
            None => Ok(()),
        }
    }

    /// Spawns the server onto the current actix system and returns a handle to stop it.
    pub fn spawn(mut self) -> ServerHandle {
        if let Some(server) = self.server.take() {
            actix_rt::spawn(server);
        }
        self.handle.clone()
    }

    /// Graceful stop: in-flight requests get `server.shutdown_timeout_secs` to finish.
    pub async fn stop(&self) {
        self.handle.stop(true).await;
    }
}
