//! Cost-based admission through `POST /mcp` on real PostgreSQL, over a million-row table
//! the planner can tell plans apart on: a sequential scan refused with a summary an agent can
//! act on, the indexed lookup admitted, a view over a table the caller may not see refused
//! without a word about that table, over-limit reads queued when the rule says so, a cost
//! budget that drains and refills on an injected clock, one budget shared by two gateways
//! through Redis, and a source that cannot plan failing closed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::approvals;
use common::env::{demo_env_with, DemoEnv};
use common::http::get_text;
use common::mcp::{call, rows, Answer, HANDSHAKE, MODERN};
use common::redis::Redis;
use common::TestGateway;
use interlock::config::RateLimitBackend;
use interlock::control::policy_file::{apply, AccessFile};
use serde_json::{json, Value};

/// A million events (indexed by id only), and a view over a table in `hr`, which the demo
/// role may not read.
const FIXTURE: &str = "
CREATE TABLE public.events (id bigint PRIMARY KEY, kind int NOT NULL, note text NOT NULL);
INSERT INTO public.events SELECT g, g % 100, md5(g::text) FROM generate_series(1, 1000000) g;
CREATE TABLE hr.event_log (id bigint NOT NULL, secret text NOT NULL);
INSERT INTO hr.event_log SELECT g, md5(g::text) FROM generate_series(1, 200000) g;
CREATE VIEW public.event_notes AS SELECT id, secret AS note FROM hr.event_log;
ANALYZE public.events;
ANALYZE hr.event_log;
";

/// The sort of the whole table: the planner's cost is far above any LIMIT's discount.
const SCAN: &str = "SELECT id, note FROM public.events WHERE note LIKE '%ab%' ORDER BY note";

fn lookup(id: u32) -> String {
    format!("SELECT id, note FROM public.events WHERE id = {id}")
}

/// The demo environment with the fixture and a role reading it, granted to demo-agent.
async fn costed_env(adjust: impl FnOnce(&mut interlock::Settings)) -> DemoEnv {
    let env = demo_env_with(adjust, |s| s.statement_timeout_ms = Some(1_000)).await;
    common::admin(&env.shop_db)
        .await
        .batch_execute(FIXTURE)
        .await
        .expect("fixture");
    env.gateway
        .state
        .sources
        .refresh_catalog("shop")
        .await
        .expect("catalog");
    access(
        &env,
        r#"
[[roles]]
source = "shop"
name = "events"
allow = ["read public.events", "read public.event_notes", "write public.events"]

[[grants]]
identity = "demo-agent"
source = "shop"
roles = ["events"]
"#,
    )
    .await;
    env
}

async fn access(env: &DemoEnv, text: &str) {
    env.access(text).await;
}

/// Replaces policy `cost` on shop with one rule.
async fn rule(env: &DemoEnv, rule: &str) {
    access(
        env,
        &format!("[[policies]]\nsource = \"shop\"\nname = \"cost\"\nrules = [{rule}]\n"),
    )
    .await;
}

async fn query_at(gateway: &TestGateway, key: &str, sql: &str, params: Option<Value>) -> Answer {
    let mut args = json!({"source_id": "shop", "sql": sql});
    if let Some(p) = params {
        args["params"] = p;
    }
    call(&gateway.url(""), Some(key), MODERN, "interlock_query", args).await
}

async fn query(env: &DemoEnv, sql: &str) -> Answer {
    query_at(&env.gateway, &env.agent_key, sql, None).await
}

/// `ok`, `queued` or the refusal's code.
fn outcome(a: &Answer) -> String {
    if !a.body["error"].is_null() {
        return a.body["error"]["data"]["code"]
            .as_str()
            .unwrap_or("?")
            .to_string();
    }
    match a.body["result"]["structuredContent"]["status"].as_str() {
        Some("queued") => "queued".into(),
        _ => "ok".into(),
    }
}

/// The audit record of the call `a` answered (waiting for it to land).
async fn record_of(env: &DemoEnv, a: &Answer) -> Value {
    let id = a.headers["x-request-id"].to_str().unwrap();
    env.audit_of(id).await
}

fn cost_details(a: &Answer) -> &Value {
    &a.body["error"]["data"]["details"]["cost"]
}

#[tokio::test]
async fn a_scan_over_the_limit_is_refused_with_a_plan_an_agent_can_act_on() {
    let env = costed_env(|_| {}).await;
    rule(
        &env,
        r#"{ kind = "max_cost", value = 10000, name = "reads" }"#,
    )
    .await;

    let refused = query(&env, SCAN).await;
    assert_eq!(outcome(&refused), "cost_exceeded", "{:?}", refused.body);
    assert_eq!(refused.body["error"]["data"]["status"], 403);
    // Decided after the call began, still a plain JSON refusal with its status (issue 47).
    assert_eq!(
        (refused.status, refused.sse),
        (403, false),
        "{:?}",
        refused.body
    );
    let d = cost_details(&refused);
    assert_eq!(d["exceeded"][0]["measure"], "cost", "{d}");
    assert_eq!(d["exceeded"][0]["limit"], 10000);
    assert_eq!(
        d["exceeded"][0]["rule"],
        "policy cost: max_cost 10000 [rule reads]"
    );
    assert!(d["estimate"]["cost"].as_f64().unwrap() > 10000.0, "{d}");
    let scan = d["expensive_steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "Seq Scan")
        .unwrap_or_else(|| panic!("no sequential scan listed: {d}"));
    assert_eq!(scan["relation"], "public.events");
    assert!(
        scan["filter"].as_str().unwrap().contains("~~ '%ab%'"),
        "{scan}"
    );
    assert!(
        d["expensive_steps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["step"] == "Sort" && s["sort_key"].is_array()),
        "the sort is listed: {d}"
    );
    let events = &d["relations"][0];
    assert_eq!(events["relation"], "public.events");
    assert!(
        events["indexes"][0]
            .as_str()
            .unwrap()
            .contains("events_pkey"),
        "{events}"
    );
    assert!(events["estimated_rows"].as_f64().unwrap() > 900_000.0);
    assert!(events["statistics"]["analyzed_at"].is_string(), "{events}");
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("costliest scan is a Seq Scan of public.events")
            && message.contains("limit of 10000"),
        "{message}"
    );

    // The same summary in the handshake dialect and on the HTTP proxy API.
    let handshake = call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        HANDSHAKE,
        "interlock_query",
        json!({"source_id": "shop", "sql": SCAN}),
    )
    .await;
    let structured = &handshake.body["result"]["structuredContent"];
    assert_eq!(structured["code"], "cost_exceeded", "{:?}", handshake.body);
    assert_eq!(structured["details"]["cost"]["exceeded"][0]["limit"], 10000);
    let proxied = common::http::client()
        .post(env.gateway.url("/v1/sources/shop/query"))
        .bearer_auth(&env.agent_key)
        .json(&json!({"sql": SCAN}))
        .send()
        .await
        .unwrap();
    assert_eq!(proxied.status(), 403);
    let body: Value = proxied.json().await.unwrap();
    assert_eq!(body["code"], "cost_exceeded", "{body}");
    assert_eq!(body["details"]["cost"]["exceeded"][0]["measure"], "cost");

    // Literals decide the estimate: one shape, one statement admitted and one refused (why
    // plans are never reused by shape).
    let narrow = query(
        &env,
        "SELECT id, note FROM public.events WHERE id > 999990 ORDER BY note",
    )
    .await;
    assert_eq!(outcome(&narrow), "ok", "{:?}", narrow.body);
    let wide = query(
        &env,
        "SELECT id, note FROM public.events WHERE id > 0 ORDER BY note",
    )
    .await;
    assert_eq!(outcome(&wide), "cost_exceeded", "{:?}", wide.body);

    // The audit record keeps the decision and the estimate.
    let record = record_of(&env, &wide).await;
    assert_eq!(record["decision"]["code"], "cost_exceeded");
    assert_eq!(record["decision"]["step"], "cost");
    assert_eq!(record["decision"]["cost"]["outcome"], "refused");
    assert!(
        record["decision"]["cost"]["estimate"]["cost"]
            .as_f64()
            .unwrap()
            > 10000.0
    );

    // The indexed lookup is admitted, and its record says so.
    let admitted = query(&env, &lookup(42)).await;
    assert_eq!(outcome(&admitted), "ok", "{:?}", admitted.body);
    assert_eq!(rows(&admitted)[0]["id"], 42);
    let record = record_of(&env, &admitted).await;
    assert_eq!(record["decision"]["cost"]["outcome"], "admitted");
    assert_eq!(
        record["decision"]["steps"],
        json!([
            "identity",
            "audit_gate",
            "source",
            "source_role",
            "policy",
            "rate_limit",
            "write_safety",
            "breaker",
            "cost",
            "execution",
            "redaction",
            "audit"
        ])
    );
    assert!(
        record["decision"]["cost"]["estimate"]["cost"]
            .as_f64()
            .unwrap()
            < 100.0
    );

    // A step's rows: the scan of a million rows counts whatever a LIMIT above it stops.
    rule(&env, r#"{ kind = "max_plan_rows", value = 100000 }"#).await;
    let many = query(&env, "SELECT id FROM public.events LIMIT 5").await;
    assert_eq!(outcome(&many), "cost_exceeded", "{:?}", many.body);
    assert_eq!(cost_details(&many)["exceeded"][0]["measure"], "rows");
    assert_eq!(outcome(&query(&env, &lookup(7)).await), "ok");

    // Metrics per source and identity.
    let metrics = get_text(&env.gateway.url("/metrics"), &env.operator_key).await;
    for outcome in ["admitted", "refused"] {
        assert!(
            metrics
                .lines()
                .any(|l| l.starts_with("interlock_cost_admissions_total")
                    && l.contains("identity=\"demo-agent\"")
                    && l.contains("source=\"shop\"")
                    && l.contains(&format!("outcome=\"{outcome}\""))),
            "no {outcome} count in /metrics"
        );
    }
}

/// Nothing of `hr.event_log`, behind the view `public.event_notes`, is in the answer: not
/// its name, a column, its 200 000 rows, a plan's counts.
fn hides_the_view(a: &Answer, what: &str) {
    let text = a.body.to_string();
    for secret in [
        "event_log",
        "hr.",
        "secret",
        "200000",
        "Rows Removed",
        "rows=",
    ] {
        assert!(!text.contains(secret), "{what}: {secret:?} leaked: {text}");
    }
}

/// Issue 47 §4: nothing about a relation behind a view reaches the agent — not its name,
/// not its columns, not a count or an estimate of its rows — whatever the statement's shape,
/// in a cost refusal or in a plan it asks for.
#[tokio::test]
async fn nothing_about_a_relation_the_caller_cannot_see_reaches_the_summary() {
    let env = costed_env(|_| {}).await;
    rule(&env, r#"{ kind = "max_cost", value = 1000 }"#).await;
    // Shapes over the view, whose underlying table is in hr (200 000 rows), which the role
    // denies.
    let shapes = [
        "SELECT id, note FROM public.event_notes ORDER BY note",
        "SELECT count(*) FROM public.event_notes",
        "SELECT note, count(*) FROM public.event_notes GROUP BY note ORDER BY 2 DESC",
        "SELECT e.id FROM public.events e JOIN public.event_notes n ON n.id = e.id WHERE e.kind = 3",
        "SELECT id FROM public.event_notes WHERE note LIKE 'a%' UNION SELECT id FROM public.events",
        "SELECT * FROM (SELECT id, note FROM public.event_notes LIMIT 100000) s ORDER BY note",
    ];
    for sql in shapes {
        let refused = query(&env, sql).await;
        assert_eq!(
            outcome(&refused),
            "cost_exceeded",
            "{sql}: {:?}",
            refused.body
        );
        hides_the_view(&refused, sql);
        let d = cost_details(&refused);
        assert!(d["estimate"]["withheld"].is_string(), "{sql}: {d}");
        assert_eq!(d["exceeded"][0]["limit"], 1000, "{sql}: {d}");
        assert!(d["exceeded"][0].get("estimate").is_none(), "{sql}: {d}");
        assert_eq!(d["relations"], json!([]), "{sql}: {d}");
        // A plan of it is refused outright: it would name what the view reads.
        for explain in [
            "EXPLAIN",
            "EXPLAIN (FORMAT JSON)",
            "EXPLAIN (VERBOSE)",
            "EXPLAIN (ANALYZE)",
        ] {
            let planned = query(&env, &format!("{explain} {sql}")).await;
            assert_eq!(
                outcome(&planned),
                "explain_over_view",
                "{explain} {sql}: {:?}",
                planned.body
            );
            hides_the_view(&planned, &format!("{explain} {sql}"));
        }
    }
    // Over visible relations alone, the summary still shows its numbers and steps.
    let refused = query(&env, SCAN).await;
    let d = cost_details(&refused);
    assert!(d["estimate"]["cost"].as_f64().is_some(), "{d}");
    assert!(
        d["expensive_steps"]
            .as_array()
            .is_some_and(|s| !s.is_empty()),
        "{d}"
    );
}

#[tokio::test]
async fn an_over_limit_read_is_queued_when_the_rule_says_so() {
    let env = costed_env(|_| {}).await;
    rule(
        &env,
        r#"{ kind = "max_cost", value = 10000, on_exceed = "queue", approvals = 1 }"#,
    )
    .await;
    let queued = query(&env, SCAN).await;
    assert_eq!(outcome(&queued), "queued", "{:?}", queued.body);
    let id = queued.body["result"]["structuredContent"]["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    // The approver sees the plan that was over the limit.
    let approval = approvals::show(&env.gateway, &env.approver_key, &id).await;
    let plan = &approval["touches"]["cost"];
    assert_eq!(plan["exceeded"][0]["limit"], 10000, "{approval}");
    assert_eq!(plan["relations"][0]["relation"], "public.events");
    // Approved, it runs as its requester, and only the requester reads its rows.
    let gw = &env.gateway;
    approvals::approve(gw, &env.approver_key, &id, json!({"reason": "one-off"})).await;
    let done = approvals::wait(gw, &env.approver_key, &id, approvals::ran).await;
    assert_eq!(done["state"], "executed", "{done}");
    let status = approvals::status(gw, &env.agent_key, &id).await;
    assert!(
        !status["result"]["returning"]["rows"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{status}"
    );
    // Under the limit it runs at once.
    assert_eq!(outcome(&query(&env, &lookup(3)).await), "ok");
    // With parameters it cannot be held (it would run later without them): refused as every
    // held call with parameters is, saying to send literals, with the plan that held it.
    let with_params = query_at(
        &env.gateway,
        &env.agent_key,
        "SELECT id, note FROM public.events WHERE note LIKE $1 ORDER BY note",
        Some(json!(["%ab%"])),
    )
    .await;
    assert_eq!(
        outcome(&with_params),
        "approval_needs_literals",
        "{:?}",
        with_params.body
    );
    assert!(with_params.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("literals"));
    assert_eq!(cost_details(&with_params)["exceeded"][0]["limit"], 10000);
}

#[tokio::test]
async fn a_write_the_planner_estimates_above_a_cost_needs_more_approvals() {
    let env = costed_env(|_| {}).await;
    rule(
        &env,
        r#"{ kind = "approvals_above_cost", value = 10000, approvals = 2 }"#,
    )
    .await;
    let gw = &env.gateway;
    let key = &env.agent_key;
    let big = approvals::queue(
        gw,
        key,
        "shop",
        "UPDATE public.events SET kind = 1 WHERE note LIKE '%ab%'",
    )
    .await;
    let small = approvals::queue(
        gw,
        key,
        "shop",
        "UPDATE public.events SET kind = 1 WHERE id = 5",
    )
    .await;
    let big = approvals::wait(gw, &env.approver_key, &big, approvals::previewed).await;
    let small = approvals::wait(gw, &env.approver_key, &small, approvals::previewed).await;
    assert_eq!(big["approvals_required"], 2, "{big}");
    assert_eq!(small["approvals_required"], 1, "{small}");
    assert!(big["touches"]["cost"]["estimate"]["cost"].as_f64().unwrap() > 10000.0);
    assert_eq!(big["touches"]["cost"]["approvals"], 2);
    // The approvers' preview shows the planner's cost too.
    assert!(
        big["preview"]["estimated_cost"].as_f64().unwrap() > 10000.0,
        "{}",
        big["preview"]
    );
    assert!(small["preview"]["estimated_cost"].as_f64().unwrap() < 100.0);
}

/// Reads admitted in a row until the budget refuses, on `gateways` in turn.
async fn drain(gateways: &[&TestGateway], key: &str, from: u32) -> (usize, Answer) {
    for i in 0..200 {
        let gw = gateways[i % gateways.len()];
        let a = query_at(gw, key, &lookup(from + i as u32), None).await;
        if outcome(&a) != "ok" {
            return (i, a);
        }
    }
    panic!("the budget never ran out");
}

#[tokio::test]
async fn a_cost_budget_drains_by_estimate_and_refills_with_the_clock() {
    let env = costed_env(|_| {}).await;
    access(
        &env,
        "[[identities]]\nname = \"demo-agent\"\nkind = \"agent\"\nrate = \"100000/s\"\nburst = 100000\ncost_budget = \"10/s\"\ncost_burst = 50\n",
    )
    .await;
    let first = query(&env, &lookup(1)).await;
    assert_eq!(outcome(&first), "ok", "{:?}", first.body);
    let units = record_of(&env, &first).await["decision"]["cost"]["budget"]["units"]
        .as_f64()
        .unwrap();
    assert!((1.0..50.0).contains(&units), "{units}");
    let (admitted, refused) = drain(&[&env.gateway], &env.agent_key, 2).await;
    // The burst holds floor(50 / units) reads, the first included.
    assert_eq!(
        admitted + 1,
        (50.0 / units).floor() as usize,
        "units {units}"
    );
    assert_eq!(
        outcome(&refused),
        "cost_budget_exhausted",
        "{:?}",
        refused.body
    );
    assert_eq!(refused.body["error"]["data"]["status"], 429);
    let retry = refused.body["error"]["data"]["retry_after_secs"]
        .as_u64()
        .unwrap();
    assert!((1..=5).contains(&retry), "{retry}");
    assert!(refused.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("retry after"));
    // Ten seconds later (on the budgets' clock) the whole burst is back.
    env.gateway
        .state
        .rate
        .budget_clock()
        .advance(Duration::from_secs(10));
    let (again, _) = drain(&[&env.gateway], &env.agent_key, 500).await;
    assert_eq!(again, (50.0 / units).floor() as usize);

    // A read costlier than the whole burst is refused for good, not told to wait.
    rule(&env, r#"{ kind = "max_cost", value = 100000000 }"#).await;
    let huge = query(&env, SCAN).await;
    assert_eq!(outcome(&huge), "cost_exceeded", "{:?}", huge.body);
    assert!(huge.body["error"]["data"]["retry_after_secs"].is_null());
    // Over a view (its table in hr, which the role denies) neither refusal tells the
    // estimate: it counts rows the caller cannot see (issue 47 §4).
    let over_view = query(
        &env,
        "SELECT id, note FROM public.event_notes ORDER BY note",
    )
    .await;
    assert_eq!(outcome(&over_view), "cost_exceeded", "{:?}", over_view.body);
    env.gateway
        .state
        .rate
        .budget_clock()
        .advance(Duration::from_secs(10));
    // Cheap reads of the view (a LIMIT over its scan) until the budget is spent.
    let mut spent = None;
    for _ in 0..200 {
        let a = query(&env, "SELECT id FROM public.event_notes LIMIT 1").await;
        if outcome(&a) != "ok" {
            spent = Some(a);
            break;
        }
    }
    let spent = spent.expect("the budget was never spent");
    assert_eq!(outcome(&spent), "cost_budget_exhausted", "{:?}", spent.body);
    for a in [&over_view, &spent] {
        let d = cost_details(a);
        assert!(d["estimate"]["withheld"].is_string(), "{d}");
        hides_the_view(a, "a budget refusal over the view");
        assert!(a.body.to_string().contains("not shown"), "{:?}", a.body);
    }
}

#[tokio::test]
async fn two_gateways_share_one_cost_budget_through_redis() {
    let redis = Redis::start();
    let url = redis.url();
    let env = costed_env(|s| {
        s.rate_limit.backend = RateLimitBackend::Redis;
        s.rate_limit.redis_url = url.clone();
    })
    .await;
    let b = TestGateway::start(env.gateway.settings.clone());
    b.state
        .sources
        .refresh_catalog("shop")
        .await
        .expect("catalog");
    // A burst for a few lookups and no refill to speak of during the test.
    access(
        &env,
        "[[identities]]\nname = \"demo-agent\"\nkind = \"agent\"\nrate = \"100000/s\"\nburst = 100000\ncost_budget = \"1/h\"\ncost_burst = 60\n",
    )
    .await;
    b.state.identities.invalidate_all();
    b.state.profiles.invalidate_all();
    let first = query(&env, &lookup(1)).await;
    assert_eq!(outcome(&first), "ok", "{:?}", first.body);
    let units = record_of(&env, &first).await["decision"]["cost"]["budget"]["units"]
        .as_f64()
        .unwrap();
    let (admitted, refused) = drain(&[&b, &env.gateway], &env.agent_key, 2).await;
    assert_eq!(
        admitted + 1,
        (60.0 / units).floor() as usize,
        "one budget for both gateways (units {units})"
    );
    assert_eq!(outcome(&refused), "cost_budget_exhausted");
    // Spent on both.
    for gw in [&env.gateway, &b] {
        let a = query_at(gw, &env.agent_key, &lookup(999), None).await;
        assert_eq!(outcome(&a), "cost_budget_exhausted", "{:?}", a.body);
        assert_eq!((a.status, a.sse), (429, false), "{:?}", a.body);
        assert!(a.headers.get("retry-after").is_some(), "{:?}", a.headers);
    }
    drop(redis);
}

#[tokio::test]
async fn a_source_that_cannot_plan_fails_closed() {
    let env = costed_env(|_| {}).await;
    rule(&env, r#"{ kind = "max_cost", value = 10000 }"#).await;
    assert_eq!(outcome(&query(&env, &lookup(5)).await), "ok");
    // A lock held elsewhere keeps the planner from the table past the statement timeout.
    let locker = common::admin(&env.shop_db).await;
    locker
        .batch_execute("BEGIN; LOCK TABLE public.events IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    let blocked = query(&env, &lookup(6)).await;
    assert_eq!(
        blocked.body["error"]["data"]["status"], 503,
        "{:?}",
        blocked.body
    );
    let reason = blocked.body["error"]["message"].as_str().unwrap();
    assert!(reason.contains("cost admission could not plan"), "{reason}");
    let record = record_of(&env, &blocked).await;
    assert_eq!(record["decision"]["code"], "cost_estimate_unavailable");
    locker.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(outcome(&query(&env, &lookup(6)).await), "ok");

    // A statement PostgreSQL refuses to plan is refused as its execution would be.
    let bad = query(&env, "SELECT id FROM public.events WHERE id = 1 / 0").await;
    assert_eq!(outcome(&bad), "tool_execution_failed", "{:?}", bad.body);
    let record = record_of(&env, &bad).await;
    assert!(
        record["decision"]["error"]
            .as_str()
            .unwrap_or_default()
            .contains("22012"),
        "{record}"
    );
}

/// With `identity_propagation = "role"` the plan runs as the caller's mapped role: a role
/// that may read the table is shown its plan, one that may not is refused by PostgreSQL
/// before any estimate exists, so nothing of the table's size reaches it.
#[tokio::test]
async fn the_plan_runs_as_the_callers_mapped_role() {
    let env = costed_env(|_| {}).await;
    common::admin(&env.shop_db)
        .await
        .batch_execute(
            "CREATE ROLE cost_login LOGIN NOINHERIT PASSWORD 'cost_login-password';
             CREATE ROLE events_reader NOLOGIN;
             CREATE ROLE no_reader NOLOGIN;
             GRANT events_reader, no_reader TO cost_login;
             GRANT USAGE ON SCHEMA public TO cost_login, events_reader, no_reader;
             GRANT SELECT ON public.events TO events_reader;",
        )
        .await
        .expect("roles");
    let dir = tempfile::tempdir().expect("dir");
    let password_file = dir.path().join("login.pw");
    std::fs::write(&password_file, "cost_login-password").expect("password file");
    interlock::control::sources::add_source(
        &env.pool,
        &interlock::control::sources::NewSource {
            id: "shop_roles".into(),
            host: Some("127.0.0.1".into()),
            port: Some(common::cluster().port),
            dbname: Some(env.shop_db.clone()),
            user: Some("cost_login".into()),
            password_file: Some(password_file.to_string_lossy().into_owned()),
            search_path: Some(vec!["public".into()]),
            cache_ttl_ms: Some(0),
            identity_propagation: Some(interlock::control::sources::Propagation::Role),
            identity_roles: Some(
                [("demo-agent", "events_reader"), ("cost-other", "no_reader")]
                    .iter()
                    .map(|(i, r)| ((*i).to_string(), (*r).to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
    )
    .await
    .expect("register");
    let other = env.new_agent("cost-other", None).await;
    access(
        &env,
        r#"
[[roles]]
source = "shop_roles"
name = "events"
allow = ["read public.events"]

[[grants]]
identity = "demo-agent"
source = "shop_roles"
roles = ["events"]

[[grants]]
identity = "cost-other"
source = "shop_roles"
roles = ["events"]

[[policies]]
source = "shop_roles"
name = "cost"
rules = [{ kind = "max_cost", value = 10000 }]
"#,
    )
    .await;
    let on = |key: &str, sql: &str| {
        let (url, key, sql) = (env.gateway.url(""), key.to_string(), sql.to_string());
        async move {
            // The gateway picks the new source up within its reload interval.
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            loop {
                let a = call(
                    &url,
                    Some(&key),
                    MODERN,
                    "interlock_query",
                    json!({"source_id": "shop_roles", "sql": sql}),
                )
                .await;
                let unknown = a.body["error"]["data"]["code"] == "not_found";
                if !unknown || std::time::Instant::now() > deadline {
                    return a;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let mine = on(&env.agent_key, SCAN).await;
    assert_eq!(outcome(&mine), "cost_exceeded", "{:?}", mine.body);
    assert_eq!(
        cost_details(&mine)["relations"][0]["relation"],
        "public.events"
    );
    assert_eq!(outcome(&on(&env.agent_key, &lookup(3)).await), "ok");

    for sql in [SCAN.to_string(), lookup(3)] {
        let theirs = on(&other, &sql).await;
        // PostgreSQL refused the plan itself, as it would the read: opaque to the caller,
        // the privilege in the audit record, and nothing ran after the cost step.
        assert_eq!(
            outcome(&theirs),
            "tool_execution_failed",
            "{:?}",
            theirs.body
        );
        let record = record_of(&env, &theirs).await;
        let error = record["decision"]["error"].as_str().unwrap_or_default();
        assert!(error.contains("42501"), "{record}");
        let steps = record["decision"]["steps"].as_array().unwrap();
        assert!(
            steps.contains(&json!("cost")) && !steps.contains(&json!("execution")),
            "{record}"
        );
        let text = theirs.body.to_string();
        for leak in ["estimate", "events_pkey", "1000000", "Seq Scan"] {
            assert!(
                !text.contains(leak),
                "{leak:?} reached a role without SELECT: {text}"
            );
        }
    }
}

/// Conditions over the planner's estimate (`plan.…`): decided in the cost step, denying or
/// holding a read by its plan, recorded like every conditional rule, and refused at apply
/// time for effects that belong to the statement's decision.
#[tokio::test]
async fn conditions_read_the_plan() {
    let env = costed_env(|_| {}).await;
    rule(
        &env,
        r#"{ kind = "deny", name = "no-big-scans", when = "'public.events' in plan.seq_scans && plan.cost > 5000", message = "Scans of public.events over 5000 units are refused: filter on id." }"#,
    )
    .await;
    let refused = query(&env, SCAN).await;
    assert_eq!(outcome(&refused), "policy_denied", "{:?}", refused.body);
    assert_eq!(
        refused.body["error"]["message"],
        "Scans of public.events over 5000 units are refused: filter on id."
    );
    assert!(cost_details(&refused)["estimate"]["cost"].as_f64().unwrap() > 5000.0);
    let record = record_of(&env, &refused).await;
    assert_eq!(
        record["decision"]["rule"],
        "policy cost: deny the call [rule no-big-scans]"
    );
    assert_eq!(record["decision"]["policy"][0]["rule"], "no-big-scans");
    assert_eq!(record["decision"]["policy"][0]["result"], "matched");
    // An index lookup scans nothing sequentially.
    let lookup_answer = query(&env, &lookup(9)).await;
    assert_eq!(outcome(&lookup_answer), "ok", "{:?}", lookup_answer.body);
    let record = record_of(&env, &lookup_answer).await;
    assert_eq!(record["decision"]["cost"]["outcome"], "admitted");

    rule(
        &env,
        r#"{ kind = "require_approval", when = "plan.rows > 500000" }"#,
    )
    .await;
    assert_eq!(
        outcome(&query(&env, "SELECT id FROM public.events LIMIT 5").await),
        "queued"
    );
    assert_eq!(outcome(&query(&env, &lookup(10)).await), "ok");

    // Report-only: recorded with what it would have done, never enforced.
    rule(
        &env,
        r#"{ kind = "deny", mode = "report", when = "plan.cost > 0" }"#,
    )
    .await;
    let reported = query(&env, &lookup(11)).await;
    assert_eq!(outcome(&reported), "ok", "{:?}", reported.body);
    let record = record_of(&env, &reported).await;
    assert_eq!(
        record["decision"]["policy"][0]["would"]["refuse"]["code"],
        "policy_denied"
    );

    // Effects that belong to the statement's decision cannot wait for its plan.
    let text = "[[policies]]\nsource = \"shop\"\nname = \"cost\"\nrules = [{ kind = \"max_rows\", value = 5, when = \"plan.cost > 1\" }]\n";
    let err = apply(&env.pool, &AccessFile::parse(text).unwrap())
        .await
        .expect_err("a max_rows over the plan is refused");
    assert!(err.to_string().contains("plan"), "{err}");
}

/// RUNTIME.md, Redis down: with `redis_unavailable = "refuse"` a call is answered 503
/// `rate limits unavailable` at its rate check, before anything is planned or run (a read
/// with a cost budget included: its budget is never reached); with `divide` (the default) a
/// replica checks its rates and spends the cost budget in its own buckets, divided by the
/// live replicas (here one: the whole budget), and the call runs.
#[tokio::test]
async fn with_redis_down_limits_and_cost_budgets_refuse_or_divide_as_configured() {
    use interlock::config::RedisUnavailable;
    for mode in [RedisUnavailable::Refuse, RedisUnavailable::Divide] {
        let mut redis = Redis::start();
        let url = redis.url();
        let env = costed_env(|s| {
            s.rate_limit.backend = RateLimitBackend::Redis;
            s.rate_limit.redis_url = url.clone();
            s.rate_limit.redis_unavailable = mode;
            s.rate_limit.redis_timeout_ms = 200;
        })
        .await;
        access(
            &env,
            "[[identities]]\nname = \"demo-agent\"\nkind = \"agent\"\nrate = \"100000/s\"\nburst = 100000\ncost_budget = \"1/h\"\ncost_burst = 1000\n",
        )
        .await;
        let up = query(&env, &lookup(1)).await;
        assert_eq!(outcome(&up), "ok", "{mode:?}: {:?}", up.body);
        redis.stop();
        let down = query(&env, &lookup(2)).await;
        match mode {
            RedisUnavailable::Refuse => {
                assert_eq!(down.status, 503, "{:?}", down.body);
                assert_eq!(
                    down.body["error"]["data"]["reason"], "rate limits unavailable",
                    "{:?}",
                    down.body
                );
                let record = record_of(&env, &down).await;
                assert_eq!(record["decision"]["refused_at"], "rate_limit", "{record}");
                assert_eq!(
                    record["decision"]["code"], "rate_limits_unavailable",
                    "{record}"
                );
                assert!(
                    record["decision"]["cost"].is_null(),
                    "nothing was planned: {record}"
                );
            }
            RedisUnavailable::Divide => {
                assert_eq!(outcome(&down), "ok", "{:?}", down.body);
                assert!(env.gateway.state.rate.falling_back(), "on the fallback");
                let record = record_of(&env, &down).await;
                assert!(
                    record["decision"]["cost"]["budget"]["units"]
                        .as_f64()
                        .unwrap_or(0.0)
                        > 0.0,
                    "the read spent from the local budget: {record}"
                );
            }
        }
    }
}

/// `policy simulate` judges a candidate's cost rules from the estimates the records kept,
/// and what it predicts is what the gateway then does; a read recorded without an estimate
/// is counted as not judged, never guessed.
#[tokio::test]
async fn simulate_predicts_cost_rules_from_recorded_estimates() {
    let env = costed_env(|_| {}).await;
    // Made before any cost rule: never planned, so its record keeps no estimate.
    let unplanned = query(&env, &lookup(3)).await;
    assert_eq!(outcome(&unplanned), "ok", "{:?}", unplanned.body);
    // The live rule admits everything but plans every read (its estimate is recorded).
    rule(
        &env,
        r#"{ kind = "max_cost", value = 1000000000, name = "all" }"#,
    )
    .await;
    let calls = [SCAN.to_string(), lookup(1), lookup(2)];
    for sql in &calls {
        let a = query(&env, sql).await;
        assert_eq!(outcome(&a), "ok", "{sql}: {:?}", a.body);
        let record = record_of(&env, &a).await;
        assert!(
            record["decision"]["replay"]["plan"]["cost"]
                .as_u64()
                .is_some(),
            "the estimate is kept for a replay: {record}"
        );
    }
    // Each candidate is tried on these four records only (the calls made to check its
    // prediction come after).
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let until = chrono::Utc::now();
    let candidates = [
        (
            r#"{ kind = "max_cost", value = 10000, name = "reads" }"#,
            "cost_exceeded",
        ),
        (
            r#"{ kind = "require_approval", when = "plan.cost > 10000", name = "big" }"#,
            "queued",
        ),
        (
            r#"{ kind = "deny", when = "'public.events' in plan.seq_scans", name = "no-scans" }"#,
            "policy_denied",
        ),
    ];
    for (candidate, scan_becomes) in candidates {
        let file =
            format!("[[policies]]\nsource = \"shop\"\nname = \"cost\"\nrules = [{candidate}]\n");
        let (status, report) = env
            .operator_post(
                "/admin/policy/simulate",
                json!({"file": file, "until": until}),
            )
            .await;
        assert_eq!(status, 200, "{report}");
        assert_eq!(report["replayed"], json!(4), "{candidate}: {report:#}");
        assert_eq!(report["drift"], json!(0), "{candidate}: {report:#}");
        assert_eq!(
            report["changed"],
            json!(1),
            "{candidate}: only the scan: {report:#}"
        );
        let example = &report["examples"][0];
        assert_eq!(example["statement"], SCAN, "{report:#}");
        match scan_becomes {
            "queued" => assert_eq!(example["would"]["verdict"], "queue", "{report:#}"),
            code => assert_eq!(example["would"]["code"], code, "{report:#}"),
        }
        // The read recorded without an estimate falls under the rule but is not judged.
        assert_eq!(report["cost_unknown"], json!(1), "{candidate}: {report:#}");
        // What was predicted is what the gateway does with the candidate applied.
        rule(&env, candidate).await;
        for sql in &calls {
            let a = query(&env, sql).await;
            let want = if sql == SCAN { scan_becomes } else { "ok" };
            assert_eq!(outcome(&a), want, "{candidate}: {sql}: {:?}", a.body);
        }
        rule(
            &env,
            r#"{ kind = "max_cost", value = 1000000000, name = "all" }"#,
        )
        .await;
    }
}
