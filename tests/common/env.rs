//! A demo environment on the shared cluster: a fresh control database, a fresh copy of the
//! demo `shop` database registered as source `shop`, the demo access file applied through
//! the operator code path, and keys for the demo identities.

use interlock::control::{self, keys, policy_file, sources};
use interlock::Settings;

use super::{admin, cluster, fresh_control_db, fresh_database, settings_for, TestGateway};

pub struct DemoEnv {
    pub gateway: TestGateway,
    pub control_db: String,
    pub shop_db: String,
    pub agent_key: String,
    pub approver_key: String,
    pub operator_key: String,
    pub pool: control::ControlPool,
}

/// Settings tuned for tests: fast reloads, a short identity cache.
pub fn test_settings(control_db: &str) -> Settings {
    let mut s = settings_for(control_db);
    s.identity.cache_ttl_ms = 300;
    s.sources.refresh_interval_ms = 200;
    s
}

pub async fn demo_env() -> DemoEnv {
    demo_env_with(|_| {}, |_| {}).await
}

/// As [`demo_env`], letting the test adjust the settings and the source registration.
pub async fn demo_env_with(
    adjust: impl FnOnce(&mut Settings),
    adjust_source: impl FnOnce(&mut sources::NewSource),
) -> DemoEnv {
    let control_db = fresh_control_db().await;
    let shop_db = fresh_database("shop").await;
    admin(&shop_db)
        .await
        .batch_execute(interlock::demo::SHOP_SQL)
        .await
        .expect("load demo data");
    let mut settings = test_settings(&control_db);
    adjust(&mut settings);
    let pool = control::connect_pool(&settings.control).expect("pool");
    let info = cluster();
    let mut new = sources::NewSource {
        id: "shop".into(),
        description: "test shop".into(),
        host: Some("127.0.0.1".into()),
        port: Some(info.port),
        dbname: Some(shop_db.clone()),
        user: Some(interlock::pgcluster::SUPERUSER.into()),
        password_file: Some(info.password_file.to_string_lossy().into_owned()),
        search_path: Some(vec!["public".into()]),
        cache_ttl_ms: Some(0),
        ..Default::default()
    };
    adjust_source(&mut new);
    sources::add_source(&pool, &new)
        .await
        .expect("register shop");
    interlock::demo::register_handbook(&pool)
        .await
        .expect("register handbook");
    policy_file::apply(
        &pool,
        &policy_file::AccessFile::parse(interlock::demo::ACCESS_TOML).expect("parse"),
    )
    .await
    .expect("apply demo access");
    let agent_key = keys::create_key(&pool, "demo-agent", "test")
        .await
        .expect("key")
        .key;
    let approver_key = keys::create_key(&pool, "demo-approver", "test")
        .await
        .expect("key")
        .key;
    let operator_key = keys::create_key(&pool, "demo-operator", "test")
        .await
        .expect("key")
        .key;
    let gateway = TestGateway::start(settings);
    DemoEnv {
        gateway,
        control_db,
        shop_db,
        agent_key,
        approver_key,
        operator_key,
        pool,
    }
}

impl DemoEnv {
    /// A decision (`approve` or `reject`, with `reason`) on approval `id` by the approver
    /// holding `key`: the HTTP status and the answer.
    pub async fn decide(
        &self,
        key: &str,
        id: &str,
        verb: &str,
        reason: &str,
    ) -> (u16, serde_json::Value) {
        let res = super::http::client()
            .post(self.gateway.url(&format!("/admin/approvals/{id}/{verb}")))
            .bearer_auth(key)
            .json(&serde_json::json!({ "reason": reason }))
            .send()
            .await
            .expect("decide");
        (
            res.status().as_u16(),
            res.json().await.unwrap_or(serde_json::Value::Null),
        )
    }

    /// The status of order `id` in the shop database.
    pub async fn order_status(&self, id: i64) -> String {
        admin(&self.shop_db)
            .await
            .query_one("SELECT status FROM public.orders WHERE id = $1", &[&id])
            .await
            .expect("order")
            .get(0)
    }

    /// Applies an access file (identities, grants, policies) and forgets the cached
    /// identities and profiles, so the next call sees it.
    pub async fn access(&self, text: &str) {
        policy_file::apply(
            &self.pool,
            &policy_file::AccessFile::parse(text).unwrap_or_else(|e| panic!("{e}\n{text}")),
        )
        .await
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
        self.gateway.state.profiles.invalidate_all();
        self.gateway.state.identities.invalidate_all();
    }

    /// `POST path` with a JSON body as the demo operator: the status and the JSON answer
    /// (`null` when it is not JSON).
    pub async fn operator_post(
        &self,
        path: &str,
        body: serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let res = super::http::client()
            .post(self.gateway.url(path))
            .bearer_auth(&self.operator_key)
            .json(&body)
            .send()
            .await
            .expect("POST");
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// The statements PostgreSQL shows in `pg_stat_activity` for the shop database whose
    /// text matches `like` (an idle pooled connection still shows its last statement).
    pub async fn shop_statements(&self, like: &str) -> Vec<String> {
        admin(&self.shop_db)
            .await
            .query(
                "SELECT query FROM pg_stat_activity WHERE datname = current_database() AND query LIKE $1",
                &[&like],
            )
            .await
            .expect("pg_stat_activity")
            .iter()
            .map(|r| r.get(0))
            .collect()
    }

    /// `interlock_query` of `sql` on the demo's shop, as the demo agent (modern era).
    pub async fn query(&self, sql: &str) -> super::mcp::Answer {
        super::mcp::call(
            &self.gateway.url(""),
            Some(&self.agent_key),
            super::mcp::MODERN,
            "interlock_query",
            serde_json::json!({"source_id": "shop", "sql": sql}),
        )
        .await
    }

    /// Mints a key for a new agent identity with the given rate (e.g. "2/s") and no grants.
    pub async fn new_agent(&self, name: &str, rate: Option<&str>) -> String {
        let rate = rate.map(|r| r.parse().expect("rate"));
        control::identities::ensure_identity(
            &self.pool,
            name,
            control::identities::IdentityKind::Agent,
            rate,
        )
        .await
        .expect("identity");
        keys::create_key(&self.pool, name, "test")
            .await
            .expect("key")
            .key
    }

    /// Grants the demo `analyst` role on shop to `name`.
    pub async fn grant_analyst(&self, name: &str) {
        let client = self.pool.get().await.expect("client");
        control::roles::grant_role(&client, name, "shop", "analyst")
            .await
            .expect("grant");
    }

    /// `interlock_query` on `shop` as the demo agent, in the modern dialect: `arguments`
    /// (`sql`, `params`, …) over `{"source_id": "shop"}`.
    pub async fn agent_query(&self, arguments: serde_json::Value) -> super::mcp::Answer {
        let mut args = serde_json::json!({"source_id": "shop"});
        if let (Some(all), serde_json::Value::Object(given)) = (args.as_object_mut(), arguments) {
            all.extend(given);
        }
        super::mcp::call(
            &self.gateway.url(""),
            Some(&self.agent_key),
            super::mcp::MODERN,
            "interlock_query",
            args,
        )
        .await
    }

    /// The state of `source`'s circuit as the admin API reports it (`closed`, `open`, …).
    pub async fn circuit_state(&self, source: &str) -> serde_json::Value {
        self.circuit(source).await["state"].clone()
    }

    /// `source`'s circuit as the admin API shows it (state, the window's counts, …).
    pub async fn circuit(&self, source: &str) -> serde_json::Value {
        let body: serde_json::Value = super::http::client()
            .get(self.gateway.url(&format!("/admin/sources/{source}")))
            .bearer_auth(&self.operator_key)
            .send()
            .await
            .expect("admin")
            .json()
            .await
            .expect("json");
        body["circuit"].clone()
    }

    /// The last audit record, as JSON (`null` while there is none yet: records of cancelled
    /// and refused calls may land after the answer, so callers poll).
    pub async fn last_audit(&self) -> serde_json::Value {
        let row = admin(&self.control_db)
            .await
            .query_opt(
                "SELECT to_jsonb(a) - 'prev_hash' - 'hash' FROM audit_records a ORDER BY seq DESC LIMIT 1",
                &[],
            )
            .await
            .expect("audit query");
        row.map_or(serde_json::Value::Null, |r| r.get(0))
    }

    /// The audit record of the request with this id (waiting up to 10 s for it to land);
    /// fails when there is none or more than one.
    pub async fn audit_of(&self, request_id: &str) -> serde_json::Value {
        let db = admin(&self.control_db).await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let rows = db
                .query(
                    "SELECT to_jsonb(a) - 'prev_hash' - 'hash' FROM audit_records a WHERE request_id = $1",
                    &[&request_id],
                )
                .await
                .expect("audit query");
            match rows.as_slice() {
                [one] => return one.get(0),
                [] if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                other => panic!("{} audit records for request {request_id}", other.len()),
            }
        }
    }
}

/// The resource the OAuth demo environments accept tokens for.
pub const OAUTH_RESOURCE: &str = "http://127.0.0.1/interlock-test/mcp";

/// A demo environment that also accepts access tokens from a test issuer (ES256 key
/// `es-1`, groups in the `groups` claim), with the issuer and its key.
pub async fn oauth_demo_env() -> (
    DemoEnv,
    super::issuer::TestIssuer,
    super::issuer::SigningKey,
) {
    let issuer = super::issuer::TestIssuer::start();
    let key = super::issuer::SigningKey::es256("es-1");
    issuer.publish(&[&key]);
    let base = issuer.base.clone();
    let env = demo_env_with(
        move |s| {
            let o = &mut s.oauth;
            o.enabled = true;
            o.resource = OAUTH_RESOURCE.into();
            o.issuer = base;
            o.roles_claim = "groups".into();
        },
        |_| {},
    )
    .await;
    (env, issuer, key)
}

/// An access token for `demo-agent` from the OAuth demo environment's issuer, valid for ten
/// minutes, with `groups` and a `department` claim.
pub fn demo_agent_token(
    issuer: &super::issuer::TestIssuer,
    key: &super::issuer::SigningKey,
    groups: serde_json::Value,
    department: &str,
) -> String {
    let now = chrono::Utc::now().timestamp();
    key.sign(&serde_json::json!({
        "iss": issuer.base, "aud": OAUTH_RESOURCE, "sub": "demo-agent",
        "scope": "interlock:tools", "iat": now, "nbf": now, "exp": now + 600,
        "groups": groups, "department": department,
    }))
}
