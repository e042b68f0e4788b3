//! The demo's token issuer (`interlock dev`): an Ed25519 key pair kept under the data
//! directory, its JWKS, the issuer's metadata served on a loopback port, and signed access
//! tokens for `interlock dev token`. It stands in for an organisation's identity provider,
//! which a real deployment configures in `[oauth]` instead.

use std::path::{Path, PathBuf};

use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::signature::{Ed25519KeyPair, KeyPair};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const KEY_FILE: &str = "signing-key.pk8";
const JWKS_FILE: &str = "jwks.json";

/// The issuer's key pair, loaded from (or created in) its directory.
pub struct DemoIssuer {
    pkcs8: Vec<u8>,
    public: Vec<u8>,
    dir: PathBuf,
}

impl DemoIssuer {
    /// Loads the key pair in `dir`, creating it (mode 0600) and its JWKS the first time.
    pub fn open(dir: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let key_path = dir.join(KEY_FILE);
        let encoded = match std::fs::read_to_string(&key_path) {
            Ok(text) => text,
            Err(_) => {
                let rng = ring::rand::SystemRandom::new();
                let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng)
                    .map_err(|_| anyhow::anyhow!("generating the demo issuer's key"))?;
                let text = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
                crate::secrets::write_private(&key_path, &text)?;
                text
            }
        };
        let pkcs8 = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|_| anyhow::anyhow!("{} is not a demo issuer key", key_path.display()))?;
        let pair = Ed25519KeyPair::from_pkcs8(&pkcs8)
            .map_err(|_| anyhow::anyhow!("{} is not an Ed25519 key", key_path.display()))?;
        let issuer = DemoIssuer {
            public: pair.public_key().as_ref().to_vec(),
            pkcs8,
            dir: dir.to_path_buf(),
        };
        std::fs::write(
            issuer.jwks_path(),
            serde_json::to_vec_pretty(&issuer.jwks())?,
        )?;
        Ok(issuer)
    }

    pub fn jwks_path(&self) -> PathBuf {
        self.dir.join(JWKS_FILE)
    }

    /// The key id: the start of the public key's SHA-256.
    pub fn kid(&self) -> String {
        hex::encode(&Sha256::digest(&self.public)[..8])
    }

    /// The public key as a JWK set.
    pub fn jwks(&self) -> Value {
        json!({"keys": [{
            "kty": "OKP",
            "crv": "Ed25519",
            "alg": "EdDSA",
            "use": "sig",
            "kid": self.kid(),
            "x": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&self.public),
        }]})
    }

    /// An access token for `identity` from `issuer` for `audience`, valid for `ttl_secs`.
    pub fn mint(
        &self,
        issuer: &str,
        audience: &str,
        identity: &str,
        scopes: &[String],
        groups: &[String],
        ttl_secs: i64,
    ) -> anyhow::Result<String> {
        let now = chrono::Utc::now().timestamp();
        let claims = json!({
            "iss": issuer,
            "aud": audience,
            "sub": identity,
            "iat": now,
            "nbf": now,
            "exp": now + ttl_secs,
            "jti": uuid::Uuid::new_v4().to_string(),
            "scope": scopes.join(" "),
            "groups": groups,
        });
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = Some(self.kid());
        header.typ = Some("at+jwt".into());
        Ok(jsonwebtoken::encode(
            &header,
            &claims,
            &EncodingKey::from_ed_der(&self.pkcs8),
        )?)
    }
}

/// The issuer's metadata (RFC 8414) as served at `base` (its issuer identifier). It names
/// only what the demo issuer serves: its keys. It has no authorization or token endpoint
/// (tokens come from `interlock dev token`), so an MCP client's interactive sign-in against
/// the demo stops at discovery, saying so.
pub fn metadata(base: &str) -> Value {
    json!({
        "issuer": base,
        "jwks_uri": format!("{base}/jwks.json"),
        "response_types_supported": [],
        "grant_types_supported": [],
    })
}

/// Serves the demo issuer's metadata and JWKS on `listener` until the process ends. It
/// issues no tokens over HTTP: `interlock dev token` signs them from the key file.
pub fn serve(
    listener: std::net::TcpListener,
    issuer: &DemoIssuer,
) -> std::io::Result<actix_web::dev::Server> {
    use actix_web::{web, App, HttpResponse, HttpServer};
    let base = format!("http://{}", listener.local_addr()?);
    let meta = metadata(&base);
    let jwks = issuer.jwks();
    Ok(HttpServer::new(move || {
        let (meta, jwks) = (meta.clone(), jwks.clone());
        App::new()
            .route(
                "/.well-known/oauth-authorization-server",
                web::get().to(move || {
                    let meta = meta.clone();
                    async move { HttpResponse::Ok().json(meta) }
                }),
            )
            .route(
                "/jwks.json",
                web::get().to(move || {
                    let jwks = jwks.clone();
                    async move { HttpResponse::Ok().json(jwks) }
                }),
            )
    })
    .workers(1)
    .listen(listener)?
    .run())
}
