//! A test identity provider on loopback: RFC 8414 metadata, a JWKS the test can rotate
//! (fetches counted), RFC 7662 introspection answers the test sets, and signing keys of
//! each accepted type (ES256 and EdDSA generated here, RS256 by `openssl`).

use std::collections::HashMap;
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use actix_web::{web, App, HttpResponse, HttpServer};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

#[derive(Default)]
struct Shared {
    jwks: Mutex<Value>,
    fetches: AtomicUsize,
    /// Opaque token → introspection answer.
    introspection: Mutex<HashMap<String, Value>>,
    /// The client credentials introspection requires (RFC 7662 §2.1), once set.
    client: Mutex<Option<(String, String)>>,
    /// Introspection requests that authenticated, and that were turned away.
    introspected: AtomicUsize,
    turned_away: AtomicUsize,
}

pub struct TestIssuer {
    pub base: String,
    shared: Arc<Shared>,
}

impl TestIssuer {
    /// Starts the issuer on its own thread; it serves until the test binary exits.
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind issuer");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = Arc::new(Shared {
            jwks: Mutex::new(json!({"keys": []})),
            ..Default::default()
        });
        let (s, b) = (shared.clone(), base.clone());
        std::thread::spawn(move || {
            actix_rt::System::new().block_on(async move {
                let server = HttpServer::new(move || {
                    let (s, b) = (s.clone(), b.clone());
                    App::new()
                        .app_data(web::Data::from(s))
                        .app_data(web::Data::new(b))
                        .route(
                            "/.well-known/oauth-authorization-server",
                            web::get().to(metadata),
                        )
                        .route("/jwks.json", web::get().to(jwks))
                        .route("/introspect", web::post().to(introspect))
                        .route("/register", web::post().to(register))
                })
                .workers(1)
                .listen(listener)
                .expect("listen")
                .run();
                let _ = server.await;
            });
        });
        TestIssuer { base, shared }
    }

    /// Publishes exactly these keys.
    pub fn publish(&self, keys: &[&SigningKey]) {
        *self.shared.jwks.lock().expect("jwks") =
            json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()});
    }

    /// How often the JWKS was fetched.
    pub fn fetches(&self) -> usize {
        self.shared.fetches.load(Ordering::SeqCst)
    }

    /// Introspection answers only a client authenticating as `id` with `secret` (HTTP Basic,
    /// RFC 6749 §2.3.1); any other request gets 401 `invalid_client`.
    pub fn require_client(&self, id: &str, secret: &str) {
        *self.shared.client.lock().expect("client") = Some((id.into(), secret.into()));
    }

    /// Introspection requests so far: (authenticated, turned away).
    pub fn introspections(&self) -> (usize, usize) {
        (
            self.shared.introspected.load(Ordering::SeqCst),
            self.shared.turned_away.load(Ordering::SeqCst),
        )
    }

    /// What introspection answers for `token`.
    pub fn introspects(&self, token: &str, answer: Value) {
        self.shared
            .introspection
            .lock()
            .expect("introspection")
            .insert(token.to_string(), answer);
    }
}

async fn metadata(base: web::Data<String>) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "issuer": base.as_str(),
        "jwks_uri": format!("{}/jwks.json", base.as_str()),
        "introspection_endpoint": format!("{}/introspect", base.as_str()),
        "authorization_endpoint": format!("{}/authorize", base.as_str()),
        "token_endpoint": format!("{}/token", base.as_str()),
        "registration_endpoint": format!("{}/register", base.as_str()),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }))
}

/// RFC 7591 dynamic registration: every client is registered as a public client.
async fn register(body: web::Json<Value>) -> HttpResponse {
    let mut client = body.into_inner();
    client["client_id"] = json!(format!("client-{}", uuid::Uuid::new_v4()));
    client["client_id_issued_at"] = json!(chrono::Utc::now().timestamp());
    client["token_endpoint_auth_method"] = json!("none");
    HttpResponse::Created().json(client)
}

async fn jwks(shared: web::Data<Shared>) -> HttpResponse {
    shared.fetches.fetch_add(1, Ordering::SeqCst);
    let set = shared.jwks.lock().expect("jwks").clone();
    HttpResponse::Ok().json(set)
}

async fn introspect(
    shared: web::Data<Shared>,
    req: actix_web::HttpRequest,
    form: web::Form<HashMap<String, String>>,
) -> HttpResponse {
    let required = shared.client.lock().expect("client").clone();
    if let Some((id, secret)) = required {
        let expected = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
        );
        let given = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if given != Some(expected.as_str()) {
            shared.turned_away.fetch_add(1, Ordering::SeqCst);
            return HttpResponse::Unauthorized()
                .insert_header(("WWW-Authenticate", "Basic realm=\"introspection\""))
                .json(json!({"error": "invalid_client"}));
        }
    }
    shared.introspected.fetch_add(1, Ordering::SeqCst);
    let token = form.get("token").cloned().unwrap_or_default();
    let answer = shared
        .introspection
        .lock()
        .expect("introspection")
        .get(&token)
        .cloned()
        .unwrap_or_else(|| json!({"active": false}));
    HttpResponse::Ok().json(answer)
}

/// A signing key and its public JWK.
pub struct SigningKey {
    pub kid: String,
    pub alg: Algorithm,
    encoding: EncodingKey,
    pub jwk: Value,
    /// The public key's bytes (DER or raw), for the HS256 confusion attack.
    pub public: Vec<u8>,
}

impl SigningKey {
    pub fn es256(kid: &str) -> Self {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("p256");
        let raw = pair.public_key_raw().to_vec();
        SigningKey {
            kid: kid.into(),
            alg: Algorithm::ES256,
            encoding: EncodingKey::from_ec_der(&pair.serialize_der()),
            jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
                        "x": URL_SAFE_NO_PAD.encode(&raw[1..33]),
                        "y": URL_SAFE_NO_PAD.encode(&raw[33..65])}),
            public: raw,
        }
    }

    pub fn ed25519(kid: &str) -> Self {
        use ring::signature::KeyPair;
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).expect("ed25519");
        let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("pair");
        let public = pair.public_key().as_ref().to_vec();
        SigningKey {
            kid: kid.into(),
            alg: Algorithm::EdDSA,
            encoding: EncodingKey::from_ed_der(pkcs8.as_ref()),
            jwk: json!({"kty": "OKP", "crv": "Ed25519", "kid": kid, "use": "sig", "alg": "EdDSA",
                        "x": URL_SAFE_NO_PAD.encode(&public)}),
            public,
        }
    }

    /// An RSA key made by `openssl` (ring signs RSA but does not generate keys).
    pub fn rs256(kid: &str) -> Self {
        let dir = tempfile::tempdir().expect("dir");
        let pem = dir.path().join("rsa.pem");
        let ok = std::process::Command::new("openssl")
            .args([
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
            ])
            .arg(&pem)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("openssl")
            .success();
        assert!(ok, "openssl genpkey");
        let modulus = std::process::Command::new("openssl")
            .args(["rsa", "-noout", "-modulus", "-in"])
            .arg(&pem)
            .output()
            .expect("openssl rsa");
        let text = String::from_utf8_lossy(&modulus.stdout);
        let hex_modulus = text.trim().trim_start_matches("Modulus=");
        let n = hex::decode(hex_modulus).expect("modulus hex");
        let pem_bytes = std::fs::read(&pem).expect("pem");
        SigningKey {
            kid: kid.into(),
            alg: Algorithm::RS256,
            encoding: EncodingKey::from_rsa_pem(&pem_bytes).expect("rsa pem"),
            jwk: json!({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                        "n": URL_SAFE_NO_PAD.encode(&n), "e": "AQAB"}),
            public: n,
        }
    }

    /// A JWT of `claims` signed with this key, naming it.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign")
    }

    /// A JWT of `claims` whose JOSE header also holds `extra` (e.g. `crit`, `b64`), properly
    /// signed with this key, naming it.
    pub fn sign_with_header(&self, extra: &Value, claims: &Value) -> String {
        let mut header = json!({"alg": self.alg, "kid": self.kid, "typ": "JWT"});
        for (k, v) in extra.as_object().expect("header fields") {
            header[k] = v.clone();
        }
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature =
            jsonwebtoken::crypto::sign(input.as_bytes(), &self.encoding, self.alg).expect("sign");
        format!("{input}.{signature}")
    }
}

/// A JWT with `alg: none` and no signature.
pub fn unsigned(kid: &str, claims: &Value) -> String {
    let header = json!({"alg": "none", "typ": "JWT", "kid": kid});
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// A JWT "signed" with HS256 using a published public key as the HMAC secret (the classic
/// algorithm-confusion attack).
pub fn hmac_with_public_key(key: &SigningKey, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, claims, &EncodingKey::from_secret(&key.public)).expect("hs256")
}
