//! Opening source connections through the [`super::row_guard`]: the pools'
//! connector. tokio-postgres' own `connect` owns its socket, so the gateway
//! opens the connection (TCP, or a Unix socket) itself and hands it to `connect_raw` — guarded
//! directly without TLS, or guarded above TLS through [`GuardTls`].

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use deadpool_postgres::Connect;
use futures_util::future::BoxFuture;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tokio_postgres::config::Host;
use tokio_postgres::tls::MakeTlsConnect;

use super::row_guard::{GuardTls, RowGuard};
use super::tls::SourceTls;

/// How long opening the connection may take when the source sets no timeout.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// An open connection to the server: TCP, or a Unix socket when the source's
/// host is a directory (as libpq and tokio-postgres read a host starting with `/`).
pub enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

type Connecting = Pin<Box<dyn Future<Output = io::Result<Socket>> + Send>>;

/// A socket that connects on first use, so that a failure to connect reaches
/// the driver as its own I/O error (typed, counted by the breaker).
pub enum LazySocket {
    Connecting(Connecting),
    Connected(Socket),
}

impl LazySocket {
    /// Connects to the first host of `config`.
    pub fn to(config: &tokio_postgres::Config) -> Self {
        let host = config.get_hosts().first().cloned();
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let timeout = config
            .get_connect_timeout()
            .copied()
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        LazySocket::Connecting(Box::pin(async move {
            let connect = async {
                match host {
                    Some(Host::Tcp(name)) => {
                        let stream = TcpStream::connect((name.as_str(), port)).await?;
                        stream.set_nodelay(true)?;
                        Ok(Socket::Tcp(stream))
                    }
                    Some(Host::Unix(dir)) => {
                        let path = dir.join(format!(".s.PGSQL.{port}"));
                        Ok(Socket::Unix(UnixStream::connect(path).await?))
                    }
                    None => Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "the source names no host",
                    )),
                }
            };
            tokio::time::timeout(timeout, connect)
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "connect timed out"))?
        }))
    }

    fn poll_connected(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&mut Socket>> {
        if let LazySocket::Connecting(future) = self {
            match future.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(socket)) => *self = LazySocket::Connected(socket),
            }
        }
        match self {
            LazySocket::Connected(socket) => Poll::Ready(Ok(socket)),
            LazySocket::Connecting(_) => Poll::Pending,
        }
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_write(cx, data),
            Socket::Unix(s) => Pin::new(s).poll_write(cx, data),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_flush(cx),
            Socket::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

impl AsyncRead for LazySocket {
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

impl AsyncWrite for LazySocket {
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
            LazySocket::Connected(s) => Pin::new(s).poll_flush(cx),
            LazySocket::Connecting(_) => Poll::Ready(Ok(())),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            LazySocket::Connected(s) => Pin::new(s).poll_shutdown(cx),
            LazySocket::Connecting(_) => Poll::Ready(Ok(())),
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
            let stream = LazySocket::to(&config);
            match tls {
                SourceTls::None => {
                    let (client, connection) = config
                        .connect_raw(RowGuard::new(stream, row_limit), tokio_postgres::NoTls)
                        .await?;
                    Ok((client, spawn_driver(connection)))
                }
                SourceTls::Rustls(mut make) => {
                    let host = first_host(&config);
                    let Ok(inner) =
                        MakeTlsConnect::<LazySocket>::make_tls_connect(&mut make, &host)
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

/// The name TLS verifies: the TCP host (a Unix socket path is no server name).
fn first_host(config: &tokio_postgres::Config) -> String {
    match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        _ => String::new(),
    }
}

/// Fails with the driver's own error for a host name TLS cannot use: the driver has no
/// public error constructor, so it is handed a stream that fails before its first byte.
async fn invalid_host(
    config: &tokio_postgres::Config,
) -> Result<(tokio_postgres::Client, tokio::task::JoinHandle<()>), tokio_postgres::Error> {
    let failing = LazySocket::Connecting(Box::pin(async {
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
    let stream = LazySocket::to(config);
    match tls {
        SourceTls::None => token.cancel_query_raw(stream, tokio_postgres::NoTls).await,
        SourceTls::Rustls(make) => {
            let mut make = make.clone();
            let host = first_host(config);
            let Ok(inner) = MakeTlsConnect::<LazySocket>::make_tls_connect(&mut make, &host) else {
                return invalid_host(config).await.map(|_| ());
            };
            token.cancel_query_raw(stream, inner).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A host that is a directory connects to the server's Unix socket in it.
    #[tokio::test]
    async fn a_directory_host_is_a_unix_socket() {
        let dir = tempfile::tempdir().expect("dir");
        let listener =
            tokio::net::UnixListener::bind(dir.path().join(".s.PGSQL.5999")).expect("bind");
        let echo = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.expect("accept");
            let mut buf = [0u8; 4];
            s.read_exact(&mut buf).await.expect("read");
            s.write_all(&buf).await.expect("write");
        });
        let mut config = tokio_postgres::Config::new();
        config.host_path(dir.path()).port(5999);
        let mut socket = LazySocket::to(&config);
        socket.write_all(b"ping").await.expect("write");
        let mut back = [0u8; 4];
        socket.read_exact(&mut back).await.expect("read");
        assert_eq!(&back, b"ping");
        echo.await.expect("echo");
    }

    /// A host nobody listens on fails as an I/O error of the connection.
    #[tokio::test]
    async fn a_closed_port_is_an_io_error() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        let port = free.local_addr().expect("addr").port();
        drop(free);
        let mut config = tokio_postgres::Config::new();
        config.host("127.0.0.1").port(port);
        let mut socket = LazySocket::to(&config);
        let err = socket.write_all(b"x").await.err().map(|e| e.kind());
        assert_eq!(err, Some(io::ErrorKind::ConnectionRefused));
    }
}
