//! TLS to PostgreSQL with rustls, following libpq's `sslmode` meanings: `require`
//! encrypts without verifying the server, `verify-full` verifies the chain against the
//! configured CA file and checks the host name. Used for sources and for the control
//! database alike.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use serde::{Deserialize, Serialize};

/// How the gateway protects a connection to PostgreSQL (libpq's `sslmode` meanings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum TlsMode {
    /// Plain TCP (loopback or trusted networks only).
    Disable,
    /// Encrypted, server certificate not verified.
    Require,
    /// Encrypted, certificate chain verified against the CA file and the host name checked.
    VerifyFull,
}

impl TlsMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TlsMode::Disable => "disable",
            TlsMode::Require => "require",
            TlsMode::VerifyFull => "verify-full",
        }
    }

    /// The mode named `s`, if any.
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "disable" => Some(TlsMode::Disable),
            "require" => Some(TlsMode::Require),
            "verify-full" => Some(TlsMode::VerifyFull),
            _ => None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("CA file {0} could not be read: {1}")]
    CaFile(String, String),
    #[error("CA file {0} holds no usable certificate")]
    NoCertificate(String),
    #[error("tls mode verify-full needs a CA file")]
    MissingCa,
    #[error("TLS configuration: {0}")]
    Config(String),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls client configuration for a mode, or `None` for `disable`.
pub fn client_config(
    mode: TlsMode,
    ca_file: Option<&str>,
) -> Result<Option<ClientConfig>, TlsSetupError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::Config(e.to_string()))?;
    match mode {
        TlsMode::Disable => Ok(None),
        TlsMode::Require => Ok(Some(
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider())))
                .with_no_client_auth(),
        )),
        TlsMode::VerifyFull => {
            let path = ca_file.ok_or(TlsSetupError::MissingCa)?;
            let pem = std::fs::read(path)
                .map_err(|e| TlsSetupError::CaFile(path.into(), e.kind().to_string()))?;
            let mut roots = RootCertStore::empty();
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(|e| TlsSetupError::CaFile(path.into(), e.to_string()))?;
                roots
                    .add(cert)
                    .map_err(|e| TlsSetupError::CaFile(path.into(), e.to_string()))?;
            }
            if roots.is_empty() {
                return Err(TlsSetupError::NoCertificate(path.into()));
            }
            Ok(Some(
                builder.with_root_certificates(roots).with_no_client_auth(),
            ))
        }
    }
}

/// `sslmode=require`: the channel is encrypted and the handshake signatures are checked,
/// but the certificate is not verified (use verify-full against active attackers).
#[derive(Debug)]
struct EncryptOnly(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
