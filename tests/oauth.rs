//! InterLock as an OAuth 2.1 protected resource, on real PostgreSQL with a test identity
//! provider on loopback: tokens minted here from generated keys of every accepted type,
//! served as a JWKS the gateway discovers from the issuer's metadata.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::{Duration, Instant};

use common::env::{demo_env_with, DemoEnv};
use common::issuer::{hmac_with_public_key, unsigned, SigningKey, TestIssuer};
use common::mcp::{call, rows, MODERN};
use common::TestGateway;
use interlock::oauth::settings::GroupRole;
use serde_json::{json, Value};

const RESOURCE: &str = "http://127.0.0.1/interlock-test/mcp";
const TOOLS: &str = "interlock:tools";
const ADMIN: &str = "interlock:admin";
const METADATA: &str = "http://127.0.0.1/.well-known/oauth-protected-resource/interlock-test/mcp";

async fn env_for(
    issuer: &TestIssuer,
    adjust: impl FnOnce(&mut interlock::oauth::settings::OAuthSettings),
) -> DemoEnv {
    let base = issuer.base.clone();
    demo_env_with(
        move |s| {
            let o = &mut s.oauth;
            o.enabled = true;
            o.resource = RESOURCE.into();
            o.issuer = base;
            o.jwks_refresh_min_interval_ms = 300;
            adjust(o);
        },
        |_| {},
    )
    .await
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Claims of a good token for `sub` with `scope`, from `iss`.
fn claims(iss: &str, sub: &str, scope: &str) -> Value {
    json!({"iss": iss, "aud": RESOURCE, "sub": sub, "scope": scope,
           "iat": now(), "nbf": now(), "exp": now() + 600})
}

fn with(mut claims: Value, key: &str, value: Value) -> Value {
    claims[key] = value;
    claims
}

/// The refusal's HTTP status and machine key (`error.data.code`).
fn refusal(a: &common::mcp::Answer) -> (u16, &str) {
    (
        a.status,
        a.body["error"]["data"]["code"].as_str().unwrap_or(""),
    )
}

/// Asserts `a` is 401 `invalid_token` with a message containing `says`.
fn assert_invalid_token(a: &common::mcp::Answer, says: &str, what: &str) {
    assert_eq!(refusal(a), (401, "invalid_token"), "{what}: {:?}", a.body);
    let message = a.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{what}: {message}");
}

fn challenge(a: &common::mcp::Answer) -> String {
    a.headers
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

async fn list_sources(env: &DemoEnv, token: &str) -> common::mcp::Answer {
    call(
        &env.gateway.url(""),
        Some(token),
        MODERN,
        "interlock_list_sources",
        json!({}),
    )
    .await
}

#[tokio::test]
async fn tokens_are_verified_and_every_kind_of_bad_token_is_refused_with_a_challenge() {
    let issuer = TestIssuer::start();
    let (es, ed, rs) = (
        SigningKey::es256("es-1"),
        SigningKey::ed25519("ed-1"),
        SigningKey::rs256("rs-1"),
    );
    issuer.publish(&[&es, &ed, &rs]);
    let env = env_for(&issuer, |_| {}).await;
    let iss = issuer.base.as_str();
    let good = claims(iss, "demo-agent", TOOLS);

    // Every accepted algorithm works, like the demo agent's key.
    for key in [&es, &ed, &rs] {
        let a = list_sources(&env, &key.sign(&good)).await;
        assert_eq!(a.status, 200, "{:?}: {:?}", key.alg, a.body);
        assert!(a.body["result"]["isError"] != true, "{:?}", a.body);
    }

    let stranger = SigningKey::es256("es-unpublished");
    let mut tampered = es.sign(&good);
    let payload = common::issuer::unsigned("x", &with(good.clone(), "sub", json!("demo-operator")));
    let forged_payload = payload.split('.').nth(1).unwrap().to_string();
    let parts: Vec<&str> = tampered.split('.').collect();
    tampered = format!("{}.{}.{}", parts[0], forged_payload, parts[2]);
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "wrong audience",
            es.sign(&with(
                good.clone(),
                "aud",
                json!("https://other.example/mcp"),
            )),
            "audience",
        ),
        (
            "wrong issuer",
            es.sign(&with(good.clone(), "iss", json!("https://evil.example"))),
            "issuer",
        ),
        (
            "expired",
            es.sign(&with(good.clone(), "exp", json!(now() - 120))),
            "expired",
        ),
        (
            "not yet valid",
            es.sign(&with(good.clone(), "nbf", json!(now() + 600))),
            "not valid yet",
        ),
        (
            "no exp",
            es.sign(&json!({"iss": iss, "aud": RESOURCE, "sub": "demo-agent", "scope": TOOLS})),
            "exp",
        ),
        ("bad signature", tampered, "signature"),
        ("unknown kid", stranger.sign(&good), "does not publish"),
        ("alg none", unsigned("es-1", &good), "\"none\""),
        (
            "HS256 with the public key",
            hmac_with_public_key(&rs, &good),
            "HS256",
        ),
        (
            "garbage",
            "eyJhbGciOi.not-a-jwt.at-all".into(),
            "well-formed",
        ),
        (
            "opaque without introspection",
            "some-opaque-token".into(),
            "neither",
        ),
        (
            "no such identity",
            es.sign(&with(good.clone(), "sub", json!("nobody-here"))),
            "no identity named",
        ),
    ];
    for (name, token, says) in &cases {
        let a = list_sources(&env, token).await;
        assert_invalid_token(&a, says, name);
        let message = a.body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            !message.contains(token.as_str()),
            "{name}: the token is echoed"
        );
        let c = challenge(&a);
        assert!(
            c.starts_with("Bearer error=\"invalid_token\""),
            "{name}: {c}"
        );
        assert!(
            c.contains(&format!("resource_metadata=\"{METADATA}\"")),
            "{name}: {c}"
        );
    }

    // No credential at all: the bare challenge tells the client where to start.
    let a = call(
        &env.gateway.url(""),
        None,
        MODERN,
        "interlock_list_sources",
        json!({}),
    )
    .await;
    assert_eq!(refusal(&a), (401, "unauthenticated"), "{:?}", a.body);
    assert_eq!(
        challenge(&a),
        format!("Bearer resource_metadata=\"{METADATA}\", scope=\"{TOOLS}\"")
    );

    // A valid token without the tools scope: 403 insufficient_scope naming the scope.
    let a = list_sources(
        &env,
        &es.sign(&with(good.clone(), "scope", json!("openid"))),
    )
    .await;
    assert_eq!(a.status, 403, "{:?}", a.body);
    assert_eq!(a.body["error"]["data"]["code"], "insufficient_scope");
    let c = challenge(&a);
    assert!(c.starts_with("Bearer error=\"insufficient_scope\""), "{c}");
    assert!(c.contains(&format!("scope=\"{TOOLS}\"")), "{c}");

    // The admin API takes tokens too, with its own scope; the HTTP proxy with the tools one.
    let http = common::http::client();
    let whoami = |token: String| {
        let http = http.clone();
        let url = env.gateway.url("/admin/whoami");
        async move { http.get(url).bearer_auth(token).send().await.unwrap() }
    };
    let operator = claims(iss, "demo-operator", TOOLS);
    let r = whoami(es.sign(&operator)).await;
    assert_eq!(r.status(), 403);
    let c = r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        c.contains("error=\"insufficient_scope\"") && c.contains(&format!("scope=\"{ADMIN}\"")),
        "{c}"
    );
    assert_eq!(
        r.json::<Value>().await.unwrap()["code"],
        "insufficient_scope"
    );
    let r = whoami(es.sign(&with(operator, "scope", json!(format!("{TOOLS} {ADMIN}"))))).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["name"], "demo-operator");
    let r = http
        .get(env.gateway.url("/v1/sources"))
        .bearer_auth(es.sign(&good))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let r = http
        .get(env.gateway.url("/v1/sources"))
        .bearer_auth(unsigned("es-1", &good))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .contains("invalid_token"));
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "invalid_token");

    // API keys keep working beside tokens.
    assert_eq!(list_sources(&env, &env.agent_key).await.status, 200);

    // The audit says who (issuer and subject), and never holds a token.
    let token = es.sign(&with(good.clone(), "jti", json!("audit-probe")));
    let a = call(
        &env.gateway.url(""),
        Some(&token),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "SELECT 1 AS one"}),
    )
    .await;
    assert_eq!(rows(&a)[0]["one"], 1, "{:?}", a.body);
    let audit = env.last_audit().await;
    assert_eq!(audit["identity"], "demo-agent");
    assert_eq!(
        audit["decision"]["credential"],
        json!({"type": "oauth", "issuer": iss, "subject": "demo-agent"})
    );
    let leaked: i64 = common::admin(&env.control_db)
        .await
        .query_one(
            "SELECT count(*) FROM audit_records a WHERE strpos(to_jsonb(a)::text, $1) > 0",
            &[&token.split('.').nth(2).unwrap()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(leaked, 0, "a token signature is in the audit log");
}

#[tokio::test]
async fn the_protected_resource_metadata_names_the_issuer_and_scopes() {
    let issuer = TestIssuer::start();
    let env = env_for(&issuer, |_| {}).await;
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = common::http::client()
            .get(env.gateway.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let doc: Value = r.json().await.unwrap();
        assert_eq!(doc["resource"], RESOURCE, "{path}");
        assert_eq!(doc["authorization_servers"], json!([issuer.base]), "{path}");
        assert_eq!(doc["scopes_supported"], json!([TOOLS, ADMIN]), "{path}");
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]), "{path}");
    }
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_unknown_kids_cannot_flood_the_issuer() {
    let issuer = TestIssuer::start();
    let old = SigningKey::es256("old");
    issuer.publish(&[&old]);
    let env = env_for(&issuer, |o| o.jwks_refresh_min_interval_ms = 2_000).await;
    let iss = issuer.base.as_str();
    let good = claims(iss, "demo-agent", TOOLS);
    assert_eq!(list_sources(&env, &old.sign(&good)).await.status, 200);
    let fetched = issuer.fetches();
    assert_eq!(fetched, 1, "the keys are fetched once and cached");

    // A flood of tokens naming unknown keys costs at most one fetch per interval.
    let started = Instant::now();
    for i in 0..20 {
        let key = SigningKey::es256(&format!("random-{i}"));
        let a = list_sources(&env, &key.sign(&good)).await;
        assert_invalid_token(&a, "which the issuer does not publish", "an unknown kid");
    }
    let intervals = started.elapsed().as_millis() / 2_000 + 1;
    assert!(
        (issuer.fetches() - fetched) as u128 <= intervals,
        "{} fetches in {:?}",
        issuer.fetches() - fetched,
        started.elapsed()
    );

    // The issuer rotates: the new key is picked up without a restart, the old one retired.
    let new = SigningKey::ed25519("new");
    issuer.publish(&[&new]);
    tokio::time::sleep(Duration::from_millis(2_100)).await;
    let a = list_sources(
        &env,
        &new.sign(&with(good.clone(), "jti", json!("after-rotation"))),
    )
    .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    let a = list_sources(
        &env,
        &old.sign(&with(good.clone(), "jti", json!("old-key"))),
    )
    .await;
    assert_invalid_token(
        &a,
        "signing key \"old\", which the issuer does not publish",
        "a retired key no longer verifies",
    );
}

#[tokio::test]
async fn token_identities_are_provisioned_granted_by_group_and_revocable() {
    let issuer = TestIssuer::start();
    let key = SigningKey::es256("k");
    issuer.publish(&[&key]);
    let env = env_for(&issuer, |o| {
        o.auto_provision = true;
        o.roles_claim = "groups".into();
        o.group_roles = vec![GroupRole {
            group: "analysts".into(),
            source: "shop".into(),
            role: "analyst".into(),
        }];
    })
    .await;
    let iss = issuer.base.as_str();
    let query = |token: String| {
        let base = env.gateway.url("");
        async move {
            call(
                &base,
                Some(&token),
                MODERN,
                "interlock_query",
                json!({"source_id": "shop", "sql": "SELECT count(*) AS n FROM public.orders"}),
            )
            .await
        }
    };

    // First use: the identity is created (audited) and its group grants the analyst role.
    let member = with(
        claims(iss, "fresh-agent", TOOLS),
        "groups",
        json!(["analysts", "other"]),
    );
    let a = query(key.sign(&member)).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
    assert!(rows(&a)[0]["n"].as_i64().unwrap() > 0);
    let provisioned: i64 = common::admin(&env.control_db)
        .await
        .query_one(
            "SELECT count(*) FROM audit_records WHERE tool = 'oauth.identity.provision' AND identity = 'fresh-agent'
               AND decision->'credential'->>'issuer' = $1",
            &[&iss],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(provisioned, 1);

    // Out of the group: the grant goes with it (after the identity cache's 300 ms).
    tokio::time::sleep(Duration::from_millis(400)).await;
    let left = with(member.clone(), "groups", json!(["other"]));
    let a = query(key.sign(&with(left, "jti", json!("left")))).await;
    assert_eq!(refusal(&a), (403, "no_grant"), "{:?}", a.body);

    // Revoking the identity's tokens refuses the ones issued so far; later ones work.
    let before = key.sign(&with(member.clone(), "jti", json!("before")));
    assert_eq!(query(before.clone()).await.status, 200);
    let r = common::http::client()
        .post(
            env.gateway
                .url("/admin/identities/fresh-agent/tokens/revoke"),
        )
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let a = query(before).await;
    assert_invalid_token(&a, "revoked", "a token issued before the revocation");
    let after = key.sign(&with(
        with(member, "iat", json!(now())),
        "jti",
        json!("after"),
    ));
    assert_eq!(query(after.clone()).await.status, 200);

    // The CLI revokes the same way.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = common::control_config_file(dir.path(), &env.control_db, "");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_interlock"))
        .arg("--config")
        .arg(&config)
        .args(["keys", "revoke-tokens", "fresh-agent"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_invalid_token(&query(after).await, "revoked", "revoked by the CLI");
}

#[tokio::test]
async fn opaque_tokens_are_checked_by_introspection() {
    let issuer = TestIssuer::start();
    let introspection = format!("{}/introspect", issuer.base);
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "client-secret").unwrap();
    let secret_path = secret.path().to_string_lossy().into_owned();
    issuer.require_client("interlock", "client-secret");
    let env = env_for(&issuer, |o| {
        o.introspection_url = introspection.clone();
        o.introspection_client_id = "interlock".into();
        o.introspection_secret_file = secret_path;
    })
    .await;
    let iss = issuer.base.as_str();
    issuer.introspects(
        "opaque-good",
        json!({"active": true, "iss": iss, "aud": RESOURCE,
        "sub": "demo-agent", "scope": TOOLS, "exp": now() + 600}),
    );
    issuer.introspects(
        "opaque-other-aud",
        json!({"active": true, "iss": iss, "aud": "https://other.example",
        "sub": "demo-agent", "scope": TOOLS, "exp": now() + 600}),
    );
    let cases = [
        ("opaque-good", None),
        ("opaque-other-aud", Some("audience")),
        ("opaque-revoked", Some("not active")),
    ];
    for (token, refused) in cases {
        let a = list_sources(&env, token).await;
        match refused {
            None => assert_eq!(a.status, 200, "{token}: {:?}", a.body),
            Some(says) => assert_invalid_token(&a, says, token),
        }
    }
    assert_eq!(
        issuer.introspections(),
        (3, 0),
        "every introspection carried the gateway's client credentials"
    );

    // A gateway with the wrong client secret is turned away by the issuer: its tokens are
    // unverifiable (503, retry later), never accepted and never blamed on the token.
    let wrong = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(wrong.path(), "not-the-secret").unwrap();
    let wrong_path = wrong.path().to_string_lossy().into_owned();
    let mut settings = env.gateway.settings.clone();
    settings.oauth.introspection_secret_file = wrong_path;
    let other = TestGateway::start(settings);
    let a = call(
        &other.url(""),
        Some("opaque-good"),
        MODERN,
        "interlock_list_sources",
        json!({}),
    )
    .await;
    assert_eq!(a.status, 503, "{:?}", a.body);
    assert!(
        a.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("identity provider unavailable"),
        "{:?}",
        a.body
    );
    assert_eq!(
        issuer.introspections(),
        (3, 1),
        "the wrong secret reached the issuer"
    );
}

#[tokio::test]
async fn with_challenge_unauthenticated_every_keyless_mcp_request_is_challenged() {
    let issuer = TestIssuer::start();
    let env = env_for(&issuer, |o| o.challenge_unauthenticated = true).await;
    let base = env.gateway.url("");
    for method in ["initialize", "tools/list"] {
        let a = common::mcp::rpc(
            &base,
            None,
            common::mcp::HANDSHAKE,
            1,
            method,
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}),
        )
        .await;
        assert_eq!(
            refusal(&a),
            (401, "unauthenticated"),
            "{method}: {:?}",
            a.body
        );
        assert_eq!(
            challenge(&a),
            format!("Bearer resource_metadata=\"{METADATA}\", scope=\"{TOOLS}\""),
            "{method}"
        );
    }
    // With a credential nothing changes.
    let a = common::mcp::rpc(
        &base,
        Some(&env.agent_key),
        common::mcp::HANDSHAKE,
        1,
        "tools/list",
        json!({}),
    )
    .await;
    assert_eq!(a.status, 200, "{:?}", a.body);
}

#[tokio::test]
async fn an_air_gapped_site_reads_the_keys_from_a_local_file_and_rereads_it_on_rotation() {
    // The issuer is never reachable: keys come from the file only.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jwks.json");
    let first = SigningKey::ed25519("file-1");
    std::fs::write(&file, json!({"keys": [first.jwk]}).to_string()).unwrap();
    let issuer = "https://login.air-gapped.example";
    let path = file.to_string_lossy().into_owned();
    let env = demo_env_with(
        move |s| {
            let o = &mut s.oauth;
            o.enabled = true;
            o.resource = RESOURCE.into();
            o.issuer = issuer.into();
            o.jwks_file = path;
            o.jwks_refresh_min_interval_ms = 100;
        },
        |_| {},
    )
    .await;
    let good = claims(issuer, "demo-agent", TOOLS);
    assert_eq!(list_sources(&env, &first.sign(&good)).await.status, 200);

    let second = SigningKey::es256("file-2");
    std::fs::write(&file, json!({"keys": [second.jwk]}).to_string()).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let a = list_sources(&env, &second.sign(&good)).await;
    assert_eq!(
        a.status, 200,
        "the rotated file is read again: {:?}",
        a.body
    );
    // The key the file no longer holds is retired (a new token: the old one is cached).
    let a = list_sources(
        &env,
        &first.sign(&with(good, "jti", json!("after-rotation"))),
    )
    .await;
    assert_invalid_token(
        &a,
        "signing key \"file-1\", which the issuer does not publish",
        "the rotated-out key",
    );
}

#[tokio::test]
async fn a_cached_token_is_not_used_past_its_expiry() {
    // A long identity cache: only the token's own `exp` can end its cache entry.
    let issuer = TestIssuer::start();
    let key = SigningKey::es256("k");
    issuer.publish(&[&key]);
    let base = issuer.base.clone();
    let env = demo_env_with(
        move |s| {
            s.identity.cache_ttl_ms = 60_000;
            let o = &mut s.oauth;
            o.enabled = true;
            o.resource = RESOURCE.into();
            o.issuer = base;
            o.leeway_secs = 0;
        },
        |_| {},
    )
    .await;
    let token = key.sign(&with(
        claims(&issuer.base, "demo-agent", TOOLS),
        "exp",
        json!(now() + 2),
    ));
    assert_eq!(list_sources(&env, &token).await.status, 200);
    tokio::time::sleep(Duration::from_millis(3_100)).await;
    let a = list_sources(&env, &token).await;
    assert_invalid_token(&a, "expired", "a cached token past its exp");
}

// ---- Issue 25 §6: refusals that were 503s, ignored header and time fields, two credentials,
// and text PostgreSQL cannot store. Each class is checked on every public route that takes a
// credential, with its HTTP status, machine key and message.

/// One credential (or several `Authorization` values) on each route that reads it: the
/// status, the machine key and the message of the answer.
async fn on_every_route(
    env: &DemoEnv,
    authorization: &[String],
) -> Vec<(&'static str, u16, Value)> {
    let http = common::http::client();
    let mut answers = Vec::new();
    // POST /mcp, modern dialect: the refusal is a JSON-RPC error with `data.code`.
    let mut req = http
        .post(env.gateway.url("/mcp"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "interlock_list_sources");
    for a in authorization {
        req = req.header("Authorization", a.as_str());
    }
    let r = req
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "interlock_list_sources", "arguments": {},
                                 "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                           "io.modelcontextprotocol/clientCapabilities": {}}}}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let body: Value = if text.starts_with('{') {
        serde_json::from_str(&text).unwrap()
    } else {
        common::mcp::last_message(&text)
    };
    answers.push((
        "POST /mcp",
        status,
        json!({"code": body["error"]["data"]["code"], "message": body["error"]["message"]}),
    ));
    // The HTTP proxy API, the admin API and the deprecated route: `{"error", "code"}`.
    for (route, method, path) in [
        ("GET /v1/sources", "GET", "/v1/sources"),
        ("GET /admin/whoami", "GET", "/admin/whoami"),
        ("POST /mcp/tools/call", "POST", "/mcp/tools/call"),
    ] {
        let mut req = if method == "GET" {
            http.get(env.gateway.url(path))
        } else {
            http.post(env.gateway.url(path))
                .json(&json!({"name": "interlock_list_sources", "arguments": {}}))
        };
        for a in authorization {
            req = req.header("Authorization", a.as_str());
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let body: Value = r.json().await.unwrap_or(Value::Null);
        answers.push((
            route,
            status,
            json!({"code": body["code"], "message": body["error"]}),
        ));
    }
    answers
}

/// Asserts every route refused `token` 401 `invalid_token` with a message containing `says`
/// (and nothing about the control database, and never the token).
async fn refused_everywhere(env: &DemoEnv, name: &str, token: &str, says: &str) {
    for (route, status, answer) in on_every_route(env, &[format!("Bearer {token}")]).await {
        let message = answer["message"].as_str().unwrap_or_default();
        assert_eq!(status, 401, "{name} on {route}: {answer}");
        assert_eq!(
            answer["code"], "invalid_token",
            "{name} on {route}: {answer}"
        );
        assert!(message.contains(says), "{name} on {route}: {message}");
        assert!(
            !message.contains("control database"),
            "{name} on {route}: {message}"
        );
        assert!(
            !message.contains(token),
            "{name} on {route}: the token is echoed"
        );
    }
}

#[tokio::test]
async fn an_identity_claim_that_is_no_identity_name_is_an_invalid_token_not_a_503() {
    let issuer = TestIssuer::start();
    let key = SigningKey::es256("k");
    issuer.publish(&[&key]);
    // With auto_provision every name a token carries would be inserted: the rule must hold
    // before any database work.
    let env = env_for(&issuer, |o| o.auto_provision = true).await;
    let iss = issuer.base.as_str();
    let scopes = format!("{TOOLS} {ADMIN}");
    let long = "a".repeat(10 * 1024);
    // (what, sub, why the message gives)
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "NUL",
            "demo\u{0}agent".into(),
            "it contains a control character",
        ),
        (
            "newline",
            "demo-agent\nx".into(),
            "it contains a control character",
        ),
        (
            "carriage return",
            "demo\ragent".into(),
            "it contains a control character",
        ),
        (
            "tab",
            "demo\tagent".into(),
            "it contains a control character",
        ),
        (
            "DEL",
            "demo\u{7f}agent".into(),
            "it contains a control character",
        ),
        ("10 KB", long, "it is 10240 characters long; at most 63"),
        (
            "leading space",
            " demo-agent".into(),
            "it starts or ends with white space",
        ),
        (
            "trailing space",
            "demo-agent ".into(),
            "it starts or ends with white space",
        ),
        (
            "inner space",
            "demo agent".into(),
            "it may hold only ASCII letters",
        ),
        (
            "non-ASCII",
            "d\u{e9}mo-agent".into(),
            "it may hold only ASCII letters",
        ),
        (
            "leading dot",
            ".demo-agent".into(),
            "it must start with a letter or a digit",
        ),
    ];
    for (name, sub, says) in &cases {
        let token = key.sign(&claims(iss, sub, &scopes));
        let says = format!("the sub claim is not a usable identity name: {says}");
        refused_everywhere(&env, name, &token, &says).await;
    }
    // Nothing was provisioned, and the refusals are audited as invalid tokens.
    let control = common::admin(&env.control_db).await;
    let identities: i64 = control
        .query_one("SELECT count(*) FROM identities WHERE name LIKE '%demo%agent%' AND name <> 'demo-agent'", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(identities, 0);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let audited: i64 = control
            .query_one(
                "SELECT count(*) FROM audit_records WHERE decision->>'code' = 'invalid_token'
                   AND decision::text LIKE '%not a usable identity name%'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if audited > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the refusals were not audited");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A good name still signs in (and is provisioned).
    let a = list_sources(&env, &key.sign(&claims(iss, "fresh.agent_1", TOOLS))).await;
    assert_eq!(a.status, 200, "{:?}", a.body);
}

#[tokio::test]
async fn header_extensions_malformed_times_future_iat_and_long_lifetimes_are_refused() {
    let issuer = TestIssuer::start();
    let key = SigningKey::es256("k");
    issuer.publish(&[&key]);
    let env = env_for(&issuer, |_| {}).await;
    let iss = issuer.base.as_str();
    let good = claims(iss, "demo-operator", &format!("{TOOLS} {ADMIN}"));
    let day = 86_400;
    let without_iat = {
        let mut c = good.clone();
        c.as_object_mut().unwrap().remove("iat");
        c
    };
    // (what, token, what the message says)
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "crit naming an extension",
            key.sign_with_header(&json!({"crit": ["exp"]}), &good),
            "crit",
        ),
        (
            "crit naming b64",
            key.sign_with_header(&json!({"crit": ["b64"], "b64": false}), &good),
            "crit",
        ),
        (
            "empty crit",
            key.sign_with_header(&json!({"crit": []}), &good),
            "crit",
        ),
        (
            "b64 false",
            key.sign_with_header(&json!({"b64": false}), &good),
            "unencoded payload (b64",
        ),
        (
            "nbf a string",
            key.sign(&with(good.clone(), "nbf", json!(now().to_string()))),
            "nbf claim is not a NumericDate",
        ),
        (
            "nbf null",
            key.sign(&with(good.clone(), "nbf", Value::Null)),
            "nbf claim is not a NumericDate",
        ),
        (
            "iat a string",
            key.sign(&with(good.clone(), "iat", json!(now().to_string()))),
            "iat claim is not a NumericDate",
        ),
        (
            "iat an object",
            key.sign(&with(good.clone(), "iat", json!({"at": now()}))),
            "iat claim is not a NumericDate",
        ),
        (
            "iat in the future",
            key.sign(&with(good.clone(), "iat", json!(now() + 300))),
            "iat is",
        ),
        (
            "lifetime over the limit",
            key.sign(&with(good.clone(), "exp", json!(now() + day + 60))),
            "longer than oauth.max_token_lifetime_secs (86400 s)",
        ),
        (
            "lifetime over the limit, no iat",
            key.sign(&with(without_iat.clone(), "exp", json!(now() + 2 * day))),
            "longer than oauth.max_token_lifetime_secs (86400 s)",
        ),
        (
            "a year-long token issued long ago",
            key.sign(&with(
                with(good.clone(), "iat", json!(now() - 300 * day)),
                "exp",
                json!(now() + 65 * day),
            )),
            "(exp - iat)",
        ),
    ];
    for (name, token, says) in &cases {
        refused_everywhere(&env, name, token, says).await;
    }

    // Within the rules they are accepted: b64 true, fractional dates, the full lifetime,
    // iat within the leeway, no iat with a short exp.
    let accepted: Vec<(&str, String)> = vec![
        (
            "b64 true",
            key.sign_with_header(&json!({"b64": true}), &good),
        ),
        (
            "fractional dates",
            key.sign(&with(
                with(good.clone(), "iat", json!(now() as f64 + 0.5)),
                "nbf",
                json!(now() as f64 - 0.5),
            )),
        ),
        ("exactly the limit", {
            let t = now();
            key.sign(&with(
                with(good.clone(), "iat", json!(t)),
                "exp",
                json!(t + day),
            ))
        }),
        (
            "iat within the leeway",
            key.sign(&with(good.clone(), "iat", json!(now() + 10))),
        ),
        ("no iat", key.sign(&without_iat)),
    ];
    let http = common::http::client();
    for (name, token) in &accepted {
        let a = list_sources(&env, token).await;
        assert_eq!(a.status, 200, "{name}: {:?}", a.body);
        let r = http
            .get(env.gateway.url("/admin/whoami"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{name}: {:?}", r.text().await);
    }

    // The limit is a setting.
    let env = env_for(&issuer, |o| o.max_token_lifetime_secs = 600).await;
    let token = key.sign(&with(good.clone(), "exp", json!(now() + 900)));
    refused_everywhere(&env, "over a 600 s limit", &token, "(600 s)").await;
    assert_eq!(
        list_sources(&env, &key.sign(&with(good, "jti", json!("short"))))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn two_authorization_headers_are_refused_on_every_route_that_reads_one() {
    let issuer = TestIssuer::start();
    let key = SigningKey::es256("k");
    issuer.publish(&[&key]);
    let env = env_for(&issuer, |_| {}).await;
    let token = key.sign(&claims(
        &issuer.base,
        "demo-operator",
        &format!("{TOOLS} {ADMIN}"),
    ));
    let pairs: Vec<(&str, Vec<String>)> = vec![
        (
            "two keys",
            vec![
                format!("Bearer {}", env.agent_key),
                format!("Bearer {}", env.operator_key),
            ],
        ),
        (
            "the same key twice",
            vec![
                format!("Bearer {}", env.operator_key),
                format!("Bearer {}", env.operator_key),
            ],
        ),
        (
            "a key and a token",
            vec![
                format!("Bearer {}", env.agent_key),
                format!("Bearer {token}"),
            ],
        ),
        (
            "a key and garbage",
            vec![
                format!("Bearer {}", env.operator_key),
                "Basic dXNlcjpwdw==".into(),
            ],
        ),
        (
            "three",
            vec![
                format!("Bearer {token}"),
                format!("Bearer {token}"),
                format!("Bearer {token}"),
            ],
        ),
    ];
    for (name, headers) in &pairs {
        let answers = on_every_route(&env, headers).await;
        assert_eq!(answers.len(), 4);
        for (route, status, answer) in answers {
            assert_eq!(status, 400, "{name} on {route}: {answer}");
            assert_eq!(
                answer["code"], "invalid_request",
                "{name} on {route}: {answer}"
            );
            let message = answer["message"].as_str().unwrap_or_default();
            assert!(
                message.contains(&format!("{} Authorization headers", headers.len())),
                "{name} on {route}: {message}"
            );
            assert!(
                !message.contains(&env.operator_key),
                "{name} on {route}: key echoed"
            );
        }
    }
    // /metrics (operator-keyed on the main listener) too.
    let r = common::http::client()
        .get(env.gateway.url("/metrics"))
        .header("Authorization", format!("Bearer {}", env.operator_key))
        .header("Authorization", format!("Bearer {}", env.agent_key))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["code"], "invalid_request");

    // One header still works everywhere.
    for (route, status, answer) in
        on_every_route(&env, &[format!("Bearer {}", env.operator_key)]).await
    {
        assert!(
            status != 400 && status != 401,
            "one operator key on {route}: {status} {answer}"
        );
    }

    // The refusal is audited like the other refusals decided before the pipeline.
    let control = common::admin(&env.control_db).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let audited: i64 = control
            .query_one(
                "SELECT count(*) FROM audit_records WHERE decision->>'rule' = 'one Authorization header'
                   AND decision->>'code' = 'invalid_request' AND outcome = 'refused'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if audited > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the refusal was not audited");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_nul_in_admin_text_is_a_400_naming_the_field_and_nothing_is_decided() {
    let issuer = TestIssuer::start();
    let env = env_for(&issuer, |_| {}).await;
    let id = common::approvals::queue(
        &env.gateway,
        &env.agent_key,
        "shop",
        "UPDATE public.orders SET status = 'held' WHERE id = 1",
    )
    .await;
    let http = common::http::client();
    let post = |path: String, key: String, body: Value| {
        let http = http.clone();
        let url = env.gateway.url(&path);
        async move {
            let r = http
                .post(url)
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .unwrap();
            (
                r.status().as_u16(),
                r.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let approver = env.approver_key.clone();
    let operator = env.operator_key.clone();
    // (what, path, key, body, the field named)
    let cases: Vec<(&str, String, &String, Value, &str)> = vec![
        (
            "reject reason",
            format!("/admin/approvals/{id}/reject"),
            &approver,
            json!({"reason": "no\u{0}"}),
            "reason",
        ),
        (
            "approve reason",
            format!("/admin/approvals/{id}/approve"),
            &approver,
            json!({"reason": "\u{0}ok", "max_rows": 5}),
            "reason",
        ),
        (
            "identity name",
            "/admin/identities".into(),
            &operator,
            json!({"name": "nul\u{0}agent", "kind": "agent"}),
            "name",
        ),
        (
            "key label",
            "/admin/identities/demo-agent/keys".into(),
            &operator,
            json!({"label": "laptop\u{0}"}),
            "label",
        ),
        (
            "grant role",
            "/admin/identities/demo-agent/grants".into(),
            &operator,
            json!({"source": "shop", "role": "analyst\u{0}"}),
            "role",
        ),
        (
            "webhook events",
            "/admin/webhooks".into(),
            &operator,
            json!({"url": "https://hooks.example/x", "events": ["approval.created", "x\u{0}"]}),
            "events[1]",
        ),
        (
            "identity in the path",
            "/admin/identities/demo%00agent/keys".into(),
            &operator,
            json!({}),
            "the path",
        ),
    ];
    for (name, path, key, body, field) in cases {
        let (status, answer) = post(path, key.clone(), body).await;
        assert_eq!(status, 400, "{name}: {answer}");
        assert_eq!(answer["code"], "nul_character", "{name}: {answer}");
        assert_eq!(answer["field"], field, "{name}: {answer}");
        let message = answer["error"].as_str().unwrap_or_default();
        assert!(
            message.starts_with(&format!("{field} contains a NUL character")),
            "{name}: {message}"
        );
    }
    // A list filter in the query string.
    let r = http
        .get(
            env.gateway
                .url("/admin/approvals?state=pending&source=sh%00op"),
        )
        .bearer_auth(&env.approver_key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert_eq!(
        r.json::<Value>().await.unwrap()["field"],
        "query parameter source"
    );

    // Nothing was decided or created: the approval is pending with no decision, and an
    // approver can still decide it.
    let a = common::approvals::show(&env.gateway, &env.approver_key, &id).await;
    assert_eq!(a["state"], "pending", "{a}");
    assert_eq!(a["decisions"], json!([]), "{a}");
    let created: i64 = common::admin(&env.control_db)
        .await
        .query_one(
            "SELECT count(*) FROM identities WHERE name LIKE 'nul%'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(created, 0);
    let (status, answer) = post(
        format!("/admin/approvals/{id}/reject"),
        env.approver_key.clone(),
        json!({"reason": "not today"}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["state"], "rejected", "{answer}");
}
