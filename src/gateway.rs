//! A gateway serving HTTP: the shared state built from settings ([`crate::state`]), the
//! fleet joined, and the HTTP server bound.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use actix_web::dev::ServerHandle;

use crate::config::Settings;
use crate::state::{AppState, StartError};

/// A gateway serving HTTP. Stop it with [`Gateway::stop`]; wait for it with
/// [`Gateway::wait`].
pub struct Gateway {
    addr: SocketAddr,
    handle: ServerHandle,
    server: Option<actix_web::dev::Server>,
    state: Arc<AppState>,
}

impl Gateway {
    /// Builds the runtime, binds the listener and starts serving. Must run inside an actix
    /// system (`#[actix_web::main]`, `actix_rt::System`).
    pub async fn start(settings: Settings) -> Result<Self, StartError> {
        let listen = settings.listen_addr()?;
        let listener = TcpListener::bind(listen).map_err(|source| StartError::Bind {
            addr: listen.to_string(),
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: listen.to_string(),
            source,
        })?;
        let state = AppState::build(settings).await?;
        state.join_fleet(addr.to_string())?;
        crate::http::metrics::spawn_sampler(state.clone());
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

    /// Serves until the server stops: SIGINT/SIGTERM (handled by actix: the listener
    /// closes, requests in flight get `server.shutdown_timeout_secs`) or [`Gateway::stop`];
    /// then stops the actors and sends the spans still queued.
    pub async fn wait(mut self) -> std::io::Result<()> {
        let served = match self.server.take() {
            Some(server) => server.await,
            None => Ok(()),
        };
        self.wind_down().await;
        served
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
        self.wind_down().await;
    }

    /// After the last request: the background loops end, the supervised actors stop for
    /// good (not restarted, not reported as failures), and the spans still queued are sent
    /// and their export stopped, off the async workers (it waits at most
    /// `telemetry.export_timeout_ms`). Every answered call's audit record is already durable.
    async fn wind_down(&self) {
        self.state.stopping.cancel();
        self.state.supervision.stop();
        let traces = self.state.tracing.clone();
        if traces.is_on() {
            let _ = tokio::task::spawn_blocking(move || traces.shutdown()).await;
        }
    }
}
