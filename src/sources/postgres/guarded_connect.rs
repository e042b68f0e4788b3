//! Opening source connections through the [`super::row_guard`]: the pools'
//! connector. tokio-postgres' own `connect` owns its socket, so the gateway
//! opens the TCP connection itself and hands it to `connect_raw` — guarded
//! directly without TLS, or guarded above TLS through [`GuardTls`].

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use deadpool_postgres::Connect;
use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_postgres::config::Host;
use tokio_postgres::tls::MakeTlsConnect;

use super::pool::SourceTls;
use super::row_guard::{GuardTls, RowGuard};

/// How long opening the TCP connection may take when the source sets no timeout.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

type Connecting = Pin<Box<dyn Future<Output = io::Result<TcpStream>> + Send>>;

/// A TCP stream that connects on first use, so that a failure to connect
/// reaches the driver as its own I/O error (typed, counted by the breaker).
pub enum LazyTcp {
    Connecting(Connecting),
    Connected(TcpStream),
}

impl LazyTcp {
    /// Connects to the first TCP host of `config`.
    pub fn to(config: &tokio_postgres::Config) -> Self {
        let host = config.get_hosts().iter().find_map(|h| match h {
            Host::Tcp(name) => Some(name.clone()),
            #[allow(unreachable_patterns)]
            _ => None,
        });
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        LazyTcp::Connecting(Box::pin(async move {
            let host = host.ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "the source names no TCP host")
            })?;
            let stream = tokio::time::timeout(timeout, TcpStream::connect((host.as_str(), port)))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))??;
            stream.set_nodelay(true)?;
            Ok(stream)
        }))
    }

    fn poll_connected(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&mut TcpStream>> {
        if let LazyTcp::Connecting(future) = self {
            match future.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(stream)) => *self = LazyTcp::Connected(stream),
            }
        }
        match self {
            LazyTcp::Connected(stream) => Poll::Ready(Ok(stream)),
            LazyTcp::Connecting(_) => Poll::Pending,
        }
    }
}

impl AsyncRead for LazyTcp {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut().poll_connected(cx) {
            Poll::Ready(Ok(s)) => Pin::new(s).poll_read(cx, buf),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for LazyTcp {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut().poll_connected(cx) {
            Poll::Ready(Ok(s)) => Pin::new(s).poll_write(cx, data),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LazyTcp::Connected(s) => Pin::new(s).poll_flush(cx),
            LazyTcp::Connecting(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LazyTcp::Connected(s) => Pin::new(s).poll_shutdown(cx),
            LazyTcp::Connecting(_) => Poll::Ready(Ok(())),
        }
    }
}

/// The pools' connector: guarded connections, the row limit fixed per source.
pub struct GuardedConnect {
    pub tls: SourceTls,
    pub row_limit: usize,
}

impl Connect for GuardedConnect {
    fn connect(
        &self,
        config: &tokio_postgres::Config,
    ) -> BoxFuture<
        '_,
        Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>,
    > {
        let config = config.clone();
        let tls = self.tls.clone();
        let row_limit = self.row_limit;
        Box::pin(async move {
            let stream = LazyTcp::to(&config);
            match tls {
                SourceTls::None => {
                    let (client, connection) = config
                        .connect_raw(RowGuard::new(stream, row_limit), tokio_postgres::NoTls)
                        .await?;
                    Ok((client, spawn_driver(connection)))
                }
                SourceTls::Rustls(mut make) => {
                    let host = first_host(&config);
                    let Ok(inner) = MakeTlsConnect::<LazyTcp>::make_tls_connect(&mut make, &host)
                    else {
                        return invalid_host(&config).await;
                    };
                    let (client, connection) = config
                        .connect_raw(stream, GuardTls { inner, row_limit })
                        .await?;
                    Ok((client, spawn_driver(connection)))
                }
            }
        })
    }
}

fn first_host(config: &tokio_postgres::Config) -> String {
    config
        .get_hosts()
        .iter()
        .find_map(|h| match h {
            Host::Tcp(name) => Some(name.clone()),
            #[allow(unreachable_patterns)]
            _ => None,
        })
        .unwrap_or_default()
}

/// Fails with the driver's own error for a host name TLS cannot use: the driver has no
/// public error constructor, so it is handed a stream that fails before its first byte.
async fn invalid_host(
    config: &tokio_postgres::Config,
) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), tokio_postgres::Error> {
    let failing = LazyTcp::Connecting(Box::pin(async {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the source host is not a valid TLS server name",
        ))
    }));
    let (client, connection) = config.connect_raw(failing, tokio_postgres::NoTls).await?;
    Ok((client, spawn_driver(connection)))
}

fn spawn_driver<S, T>(connection: tokio_postgres::Connection<S, T>) -> tokio::task::JoinHandle<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "source connection ended");
        }
    })
}

/// Sends a cancel request for `token`'s session over a new connection to the source.
pub async fn cancel(
    token: &tokio_postgres::CancelToken,
    config: &tokio_postgres::Config,
    tls: &SourceTls,
) -> Result<(), tokio_postgres::Error> {
    let stream = LazyTcp::to(config);
    match tls {
        SourceTls::None => token.cancel_query_raw(stream, tokio_postgres::NoTls).await,
        SourceTls::Rustls(make) => {
            let mut make = make.clone();
            let host = first_host(config);
            let Ok(inner) = MakeTlsConnect::<LazyTcp>::make_tls_connect(&mut make, &host) else {
                return invalid_host(config).await.map(|_| ());
            };
            token.cancel_query_raw(stream, inner).await
        }
    }
}
