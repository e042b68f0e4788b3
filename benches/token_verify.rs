//! Cost of accepting an OAuth access token the gateway has not seen yet (signature,
//! registered claims, claims to identity; keys from a local JWKS file, so no network), per
//! algorithm, against the baseline every credential pays anyway: the SHA-256 that keys the
//! key and token caches (a seen token costs only that and a cache lookup).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const RESOURCE: &str = "https://gw.example.com/mcp";
const ISSUER: &str = "https://login.example.com";

/// (kid, algorithm, signing key, public JWK) for ES256 and EdDSA.
fn keys() -> Vec<(&'static str, Algorithm, EncodingKey, Value)> {
    use ring::signature::KeyPair;
    let ec = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let raw = ec.public_key_raw().to_vec();
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let ed = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    vec![
        (
            "es",
            Algorithm::ES256,
            EncodingKey::from_ec_der(&ec.serialize_der()),
            json!({"kty": "EC", "crv": "P-256", "kid": "es",
                   "x": URL_SAFE_NO_PAD.encode(&raw[1..33]), "y": URL_SAFE_NO_PAD.encode(&raw[33..65])}),
        ),
        (
            "ed",
            Algorithm::EdDSA,
            EncodingKey::from_ed_der(pkcs8.as_ref()),
            json!({"kty": "OKP", "crv": "Ed25519", "kid": "ed",
                   "x": URL_SAFE_NO_PAD.encode(ed.public_key().as_ref())}),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let keys = keys();
    let dir = tempfile::tempdir().unwrap();
    let jwks = dir.path().join("jwks.json");
    let set: Vec<&Value> = keys.iter().map(|k| &k.3).collect();
    std::fs::write(&jwks, json!({"keys": set}).to_string()).unwrap();
    let mut settings = interlock::Settings::load_with_env(None, Vec::new())
        .unwrap()
        .oauth;
    settings.enabled = true;
    settings.resource = RESOURCE.into();
    settings.issuer = ISSUER.into();
    settings.jwks_file = jwks.to_string_lossy().into_owned();
    let oauth = interlock::oauth::OAuth::from_settings(&settings)
        .unwrap()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let now = chrono::Utc::now().timestamp();
    let claims = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "bench-agent",
                        "scope": "interlock:tools", "iat": now, "exp": now + 3600});

    let mut group = c.benchmark_group("token");
    let sample = {
        let (kid, alg, key, _) = &keys[0];
        let mut header = Header::new(*alg);
        header.kid = Some((*kid).into());
        jsonwebtoken::encode(&header, &claims, key).unwrap()
    };
    group.bench_function("baseline_sha256_of_the_credential", |b| {
        b.iter(|| black_box(Sha256::digest(black_box(sample.as_bytes()))));
    });
    for (kid, alg, key, _) in &keys {
        let mut header = Header::new(*alg);
        header.kid = Some((*kid).into());
        let token = jsonwebtoken::encode(&header, &claims, key).unwrap();
        // Load the keys once (the first token pays the file read).
        rt.block_on(oauth.verify(&token)).unwrap();
        group.bench_function(format!("verify_{alg:?}"), |b| {
            b.iter(|| rt.block_on(oauth.verify(black_box(&token))).unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
