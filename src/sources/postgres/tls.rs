//! The TLS connector of a source's connections ([`crate::pg_tls`] makes its configuration).

use tokio_postgres_rustls::MakeRustlsConnect;

pub use crate::pg_tls::{client_config, TlsSetupError};

/// The TLS connector of a source, kept for cancel requests (which open a new connection).
#[derive(Clone)]
pub enum SourceTls {
    None,
    Rustls(MakeRustlsConnect),
}
