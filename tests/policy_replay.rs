//! `policy simulate` and `policy explain` through the admin API, on real PostgreSQL: a
//! workload made through `POST /mcp` is replayed against the live policy with zero
//! differences (the records keep every fact the decision reads), and against a changed
//! policy the report predicts, call by call, what the gateway does once that policy is
//! applied and the same calls are made again. Explain shows the rules that decide a call.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use chrono::TimeZone;
use common::env::{demo_env, DemoEnv};
use common::mcp::{call, rows, MODERN};
use interlock::control::policy_file::{apply, AccessFile};
use serde_json::{json, Value};

/// The live policy the workload runs under: conditional rules of every effect, a report-only
/// rule, on top of the demo's grants and masks.
const LIVE: &str = r#"
[[identities]]
name = "replay-b"
kind = "agent"

[[identities]]
name = "replay-c"
kind = "agent"

[[grants]]
identity = "replay-b"
source = "shop"
roles = ["analyst"]

[[policies]]
source = "shop"
name = "hours"
[[policies.rules]]
name = "no-night-deletes"
kind = "deny"
when = "statement.deletes_rows && (request.hour < 9 || request.hour >= 18)"
message = "Deletes only in business hours."
[[policies.rules]]
name = "small-night-reads"
kind = "max_rows"
value = 3
when = "request.hour >= 18"
[[policies.rules]]
name = "watch-products"
kind = "deny"
mode = "report"
when = "'public.products' in statement.tables_read"
"#;

/// The candidate: every kind of change against `LIVE`.
const CANDIDATE: &str = r#"
# replay-c gets the analyst role: its refused calls become allowed.
[[grants]]
identity = "replay-c"
source = "shop"
roles = ["analyst"]

# Customer names are masked for everyone.
[[redactions]]
source = "shop"
column = "public.customers.name"
strategy = "redact"

[[policies]]
source = "shop"
name = "hours"
# Night writes (deletes too) are allowed now, but need two approvals.
[[policies.rules]]
name = "night-writes-two"
kind = "approvals_required"
resource = "public.*"
value = 2
when = "request.hour < 9 || request.hour >= 18"
# The night cap is tighter.
[[policies.rules]]
name = "small-night-reads"
kind = "max_rows"
value = 2
when = "request.hour >= 18"
# demo-agent's reads of products wait for a human.
[[policies.rules]]
name = "products-held"
kind = "require_approval"
when = "'public.products' in statement.tables_read && caller.identity == 'demo-agent'"
# The report-only rule is enforced, for replay-b only.
[[policies.rules]]
name = "watch-products"
kind = "deny"
when = "'public.products' in statement.tables_read && caller.identity == 'replay-b'"
"#;

/// (who, clock hour, sql, params): reads, masked reads, writes, refusals of each step.
fn workload() -> Vec<(&'static str, u32, &'static str, Vec<Value>)> {
    vec![
        ("a", 10, "SELECT id, name, email FROM public.customers WHERE id <= 4 ORDER BY id", vec![]),
        ("a", 22, "SELECT id, name, email FROM public.customers WHERE id <= 4 ORDER BY id", vec![]),
        ("a", 10, "SELECT id, total_cents FROM public.orders WHERE customer_id = $1", vec![json!(7)]),
        ("b", 23, "SELECT o.id, c.name AS who FROM public.orders o JOIN public.customers c ON c.id = o.customer_id WHERE o.id < 5", vec![]),
        ("b", 10, "SELECT sku, price_cents FROM public.products ORDER BY sku LIMIT 5", vec![]),
        ("a", 10, "SELECT sku FROM public.products WHERE id = 1", vec![]),
        ("a", 10, "UPDATE public.orders SET status = 'shipped' WHERE id = 1", vec![]),
        ("a", 21, "UPDATE public.orders SET status = 'shipped' WHERE id = 2", vec![]),
        ("b", 7, "DELETE FROM public.orders WHERE id = 3", vec![]),
        ("a", 10, "SELECT amount_cents FROM hr.salaries", vec![]),
        ("a", 10, "SELECT nope FROM public.customers", vec![]),
        ("a", 10, "SELEC 1", vec![]),
        ("a", 10, "EXPLAIN SELECT id FROM public.orders WHERE status = 'new'", vec![]),
        ("a", 10, "WITH x AS (SELECT name AS n FROM public.customers WHERE id = $1) SELECT n FROM x", vec![json!(2)]),
        ("c", 10, "SELECT id FROM public.customers WHERE id = 1", vec![]),
        ("c", 22, "UPDATE public.orders SET status = 'new' WHERE id = 4", vec![]),
        ("b", 19, "SELECT count(*) AS n, max(created_at) AS latest FROM public.orders", vec![]),
    ]
}

fn at(hour: u32) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc
        .with_ymd_and_hms(2026, 12, 4, hour, 5, 0)
        .unwrap()
}

async fn replay_records(env: &DemoEnv) -> Vec<(i64, Value)> {
    let client = env.pool.get().await.unwrap();
    client
        .query(
            "SELECT seq, decision -> 'replay' -> 'effect' FROM audit_records
              WHERE decision ? 'replay' ORDER BY seq",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// One call as the gateway answered it, and its record's (seq, effect).
struct Made {
    seq: i64,
    effect: Value,
    answer: common::mcp::Answer,
}

/// Makes every call of the workload, each once its predecessor's record has landed.
async fn run(env: &DemoEnv, keys: &[(&str, String)]) -> Vec<Made> {
    let calls: Vec<(String, u32, String, Vec<Value>)> = workload()
        .into_iter()
        .map(|(who, hour, sql, params)| {
            let key = keys.iter().find(|(k, _)| *k == who).unwrap().1.clone();
            (key, hour, sql.to_string(), params)
        })
        .collect();
    run_calls(env, &calls).await
}

/// Makes the calls (bearer credential, clock hour, sql, params) in order, each once its
/// predecessor's record has landed; returns each answer with its record.
async fn run_calls(env: &DemoEnv, calls: &[(String, u32, String, Vec<Value>)]) -> Vec<Made> {
    let clock = &env.gateway.state.policy_clock;
    let before = replay_records(env).await.len();
    let mut answers = Vec::new();
    for (i, (key, hour, sql, params)) in calls.iter().enumerate() {
        clock.set(Some(at(*hour)));
        answers.push(
            call(
                &env.gateway.url(""),
                Some(key),
                MODERN,
                "interlock_query",
                json!({"source_id": "shop", "sql": sql, "params": params}),
            )
            .await,
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while replay_records(env).await.len() < before + i + 1 {
            assert!(
                std::time::Instant::now() < deadline,
                "no record for call {i}: {sql}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
    clock.set(None);
    replay_records(env)
        .await
        .split_off(before)
        .into_iter()
        .zip(answers)
        .map(|((seq, effect), answer)| Made {
            seq,
            effect,
            answer,
        })
        .collect()
}

/// Whether a masked value has its strategy's shape (docs/types.md).
fn looks_masked(strategy: &str, v: &Value) -> bool {
    match strategy {
        "null" => v.is_null(),
        "redact" => v == "[REDACTED]",
        "hash" => v.as_str().is_some_and(|s| s.starts_with("hmac:")),
        partial => match partial
            .strip_prefix("partial(")
            .and_then(|n| n.strip_suffix(')'))
            .and_then(|n| n.parse::<usize>().ok())
        {
            // Stars, then at most the kept tail in clear.
            Some(kept) => v.as_str().is_some_and(|s| {
                s.starts_with('*') && s.chars().filter(|c| *c != '*').count() <= kept
            }),
            None => false,
        },
    }
}

/// What the gateway answered, checked against an effect read from outside: the refusal's
/// code, the rows within the cap and their masked columns masked, or the call queued for
/// that many approvals (read from the approval itself).
async fn assert_answer_is(env: &DemoEnv, effect: &Value, made: &Made, what: &str) {
    let a = &made.answer;
    match effect["verdict"].as_str() {
        Some("refuse") => {
            assert_eq!(
                a.body["error"]["data"]["code"], effect["code"],
                "{what}: {:?}",
                a.body
            );
        }
        Some("read") => {
            assert_eq!(
                a.body["result"]["isError"],
                json!(false),
                "{what}: {:?}",
                a.body
            );
            assert_ne!(
                a.body["result"]["structuredContent"]["status"],
                json!("queued"),
                "{what}: a read the effect runs at once was queued"
            );
            let got = rows(a);
            if let Some(cap) = effect["row_cap"].as_u64() {
                assert!(
                    got.len() as u64 <= cap,
                    "{what}: {} rows over the cap {cap}",
                    got.len()
                );
            }
            for m in effect["masked"].as_array().into_iter().flatten() {
                let (column, strategy) = m.as_str().unwrap().split_once('=').unwrap();
                for row in &got {
                    assert!(
                        looks_masked(strategy, &row[column]),
                        "{what}: {column} not masked ({strategy}): {row}"
                    );
                }
            }
        }
        Some("queue") => {
            let sc = &a.body["result"]["structuredContent"];
            assert_eq!(sc["status"], "queued", "{what}: {:?}", a.body);
            let id: uuid::Uuid = sc["approval_id"].as_str().unwrap().parse().unwrap();
            let client = env.pool.get().await.unwrap();
            let required: i32 = client
                .query_one(
                    "SELECT approvals_required FROM approvals WHERE id = $1",
                    &[&id],
                )
                .await
                .unwrap()
                .get(0);
            assert_eq!(json!(required), effect["approvals"], "{what}");
        }
        other => panic!("{what}: unknown verdict {other:?}"),
    }
}

/// Every call predicted: a changed call is an example whose predicted effect is what the
/// gateway did after the change (its answer checked against the prediction, not only its
/// record); an unchanged call did what it did before. Returns how many changed.
async fn assert_predicted(env: &DemoEnv, report: &Value, before: &[Made], after: &[Made]) -> usize {
    assert_eq!(after.len(), before.len());
    let examples = report["examples"].as_array().unwrap();
    let mut changed = 0;
    for (i, (was, now)) in before.iter().zip(after).enumerate() {
        match examples.iter().find(|e| e["seq"] == json!(was.seq)) {
            Some(e) => {
                changed += 1;
                assert_eq!(e["recorded"], was.effect, "call {i}");
                assert_eq!(e["would"], now.effect, "call {i}");
                assert_answer_is(env, &e["would"], now, &format!("call {i} (predicted)")).await;
            }
            None => {
                assert_eq!(was.effect, now.effect, "call {i} changed unpredicted");
                assert_answer_is(env, &was.effect, now, &format!("call {i} (unchanged)")).await;
            }
        }
    }
    assert_eq!(report["changed"], json!(changed), "{report:#}");
    changed
}

/// `GET path` on the admin API as the operator: (status, body).
async fn admin_get(env: &DemoEnv, path: &str) -> (u16, Value) {
    let res = common::http::client()
        .get(env.gateway.url(path))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .unwrap();
    (
        res.status().as_u16(),
        res.json().await.unwrap_or(Value::Null),
    )
}

async fn setup() -> (DemoEnv, Vec<(&'static str, String)>) {
    let env = demo_env().await;
    apply(&env.pool, &AccessFile::parse(LIVE).unwrap())
        .await
        .unwrap();
    env.gateway.state.profiles.invalidate_all();
    let b = interlock::control::keys::create_key(&env.pool, "replay-b", "t")
        .await
        .unwrap()
        .key;
    let c = interlock::control::keys::create_key(&env.pool, "replay-c", "t")
        .await
        .unwrap()
        .key;
    let keys = vec![("a", env.agent_key.clone()), ("b", b), ("c", c)];
    (env, keys)
}

#[tokio::test]
async fn a_replay_against_the_live_policy_predicts_every_recorded_decision() {
    let (env, keys) = setup().await;
    let recorded = run(&env, &keys).await;
    assert_eq!(recorded.len(), workload().len());
    // Every kind of effect is in the workload.
    for verdict in ["read", "queue", "refuse"] {
        assert!(
            recorded.iter().any(|m| m.effect["verdict"] == verdict),
            "{verdict}"
        );
    }
    // Each answer is what its recorded effect says.
    for (i, made) in recorded.iter().enumerate() {
        assert_answer_is(&env, &made.effect, made, &format!("call {i}")).await;
    }
    let (status, report) = env
        .operator_post("/admin/policy/simulate", json!({"file": ""}))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["records"], json!(workload().len()), "{report:#}");
    assert_eq!(report["replayed"], json!(workload().len()), "{report:#}");
    assert_eq!(report["changed"], json!(0), "{report:#}");
    assert_eq!(report["drift"], json!(0), "{report:#}");
    assert_eq!(report["skipped"], json!({}), "{report:#}");
    // The report-only rule's would-be effects are counted.
    assert_eq!(
        report["report_only"]["policy hours: rule watch-products"]["would_change"],
        json!(2),
        "{report:#}"
    );
    // The console's chart of report-only rules over time counts the same.
    let (_, chart) = admin_get(&env, "/admin/policy/reported?since=1h&bucket=60").await;
    let rules = chart["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1, "{chart:#}");
    assert_eq!(rules[0]["rule"], "watch-products", "{chart:#}");
    assert_eq!(rules[0]["would_change"], json!(2), "{chart:#}");
    let in_buckets: i64 = rules[0]["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["would_change"].as_i64().unwrap())
        .sum();
    assert_eq!(in_buckets, 2, "{chart:#}");
    for bad in ["since=soon", "since=1h&bucket=0", "since=30d&bucket=1"] {
        let (status, body) = admin_get(&env, &format!("/admin/policy/reported?{bad}")).await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    // The command line gives the same report, through the admin API.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("same.toml");
    std::fs::write(&file, "").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_interlock"))
        .args(["policy", "simulate", "--endpoint", &env.gateway.url("")])
        .arg(&file)
        .env("INTERLOCK_API_KEY", &env.operator_key)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!(
            "replayed {n} of {n} records",
            n = workload().len()
        )) && text.contains("0 would change"),
        "{text}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_interlock"))
        .args(["policy", "explain", "--endpoint", &env.gateway.url("")])
        .args([
            "--identity",
            "demo-agent",
            "--source",
            "shop",
            "--at",
            "2026-12-04T22:00:00Z",
        ])
        .args(["--sql", "DELETE FROM public.orders WHERE id = 1"])
        .env("INTERLOCK_API_KEY", &env.operator_key)
        .output()
        .unwrap();
    let explained: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(
        explained["effect"]["code"], "policy_denied",
        "{explained:#}"
    );
    // Filters select records: one identity, a window that holds nothing.
    let (_, only_b) = env
        .operator_post(
            "/admin/policy/simulate",
            json!({"file": "", "identity": "replay-b"}),
        )
        .await;
    assert_eq!(only_b["replayed"], json!(4), "{only_b:#}");
    let (_, none) = env
        .operator_post(
            "/admin/policy/simulate",
            json!({"file": "", "since": "2999-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(none["records"], json!(0), "{none:#}");
    let (_, capped) = env
        .operator_post("/admin/policy/simulate", json!({"file": "", "limit": 5}))
        .await;
    assert_eq!(capped["replayed"], json!(5), "{capped:#}");
    assert_eq!(capped["truncated"], json!(true), "{capped:#}");
}

#[tokio::test]
async fn a_replay_against_a_changed_policy_predicts_what_the_gateway_then_does() {
    let (env, keys) = setup().await;
    let before = run(&env, &keys).await;
    let (status, report) = env
        .operator_post(
            "/admin/policy/simulate",
            json!({"file": CANDIDATE, "examples": 100}),
        )
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["drift"], json!(0), "{report:#}");
    // The live state is unchanged by the simulation.
    let (_, again) = env
        .operator_post("/admin/policy/simulate", json!({"file": ""}))
        .await;
    assert_eq!(again["changed"], json!(0), "a simulation wrote: {again:#}");

    // Apply the candidate and make the same calls.
    apply(&env.pool, &AccessFile::parse(CANDIDATE).unwrap())
        .await
        .unwrap();
    env.gateway.state.profiles.invalidate_all();
    let after = run(&env, &keys).await;
    let changed = assert_predicted(&env, &report, &before, &after).await;
    assert!(changed >= 6, "the candidate changes many calls: {report:#}");
    for kind in [
        "newly_allowed",
        "newly_refused",
        "newly_masked",
        "row_cap_changed",
        "approvals_changed",
        "newly_queued",
    ] {
        assert!(
            report["changes"][kind].as_u64().unwrap_or(0) > 0,
            "{kind}: {report:#}"
        );
    }
    assert!(
        report["by_identity"]["replay-c"]["changes"]["newly_allowed"]
            .as_u64()
            .unwrap_or(0)
            >= 1,
        "{report:#}"
    );
    assert!(
        report["by_rule"]
            .as_object()
            .unwrap()
            .keys()
            .any(|r| r.contains("watch-products")),
        "{report:#}"
    );
}

#[tokio::test]
async fn a_file_apply_would_refuse_is_refused_by_simulate_and_nothing_changes() {
    let (env, _keys) = setup().await;
    let cases = [
        (
            "[[policies]]\nsource = \"shop\"\nname = \"p\"\n[[policies.rules]]\nname = \"r\"\nkind = \"deny\"\nwhen = \"caller.nope\"\n",
            "rule \"r\"",
        ),
        ("[[grants]]\nidentity = \"ghost\"\nsource = \"shop\"\nroles = [\"analyst\"]\n", "no identity named \"ghost\""),
        ("[[grants]]\nidentity = \"replay-c\"\nsource = \"shop\"\nroles = [\"nope\"]\n", "no role \"nope\""),
        ("[[redactions]]\nsource = \"shop\"\ncolumn = \"customers.name\"\nstrategy = \"redact\"\n", "schema.table.column"),
        ("[[roles]]\nsource = \"nowhere\"\nname = \"r\"\nallow = [\"read public.t\"]\n", "no source"),
        ("not toml [", "access file"),
    ];
    for (file, want) in cases {
        let (status, body) = env
            .operator_post("/admin/policy/simulate", json!({"file": file}))
            .await;
        assert!(
            status == 400 || status == 404 || status == 409,
            "{status} {body}"
        );
        assert!(
            body["error"].as_str().unwrap_or("").contains(want),
            "{file}: {body}"
        );
        // `policy apply` refuses the same file.
        if let Ok(parsed) = AccessFile::parse(file) {
            assert!(apply(&env.pool, &parsed).await.is_err(), "{file}");
        }
    }
    let (status, body) = env
        .operator_post(
            "/admin/policy/simulate",
            json!({"file": "", "since": "last week"}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("RFC 3339"),
        "{body}"
    );
    // Only operators simulate.
    let res = common::http::client()
        .post(env.gateway.url("/admin/policy/simulate"))
        .bearer_auth(&env.agent_key)
        .json(&json!({"file": ""}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 403);
}

#[tokio::test]
async fn explain_shows_the_rules_that_decide_a_call_as_the_gateway_decides_it() {
    let (env, keys) = setup().await;
    let night = "2026-12-04T22:00:00Z";
    // (identity, at, sql, file, expected effect verdict, expected code or cap)
    let cases: Vec<(&str, &str, &str, Option<&str>, Value)> = vec![
        (
            "demo-agent",
            night,
            "DELETE FROM public.orders WHERE id = 1",
            None,
            json!({"verdict": "refuse", "code": "policy_denied"}),
        ),
        (
            "demo-agent",
            night,
            "UPDATE public.orders SET status = 'x' WHERE id = 1",
            None,
            json!({"verdict": "queue", "approvals": 1}),
        ),
        (
            "demo-agent",
            "2026-12-04T10:00:00Z",
            "UPDATE public.orders SET status = 'x' WHERE id = 1",
            None,
            json!({"verdict": "queue", "approvals": 1}),
        ),
        (
            "demo-agent",
            night,
            "UPDATE public.orders SET status = 'x' WHERE id = 1",
            Some(CANDIDATE),
            json!({"verdict": "queue", "approvals": 2}),
        ),
        (
            "demo-agent",
            night,
            "SELECT id, email FROM public.customers",
            None,
            json!({"verdict": "read", "row_cap": 3, "masked": ["email=partial(12)"]}),
        ),
        (
            "replay-c",
            night,
            "SELECT id FROM public.customers",
            None,
            json!({"verdict": "refuse", "code": "no_grant"}),
        ),
        (
            "demo-agent",
            night,
            "SELECT amount_cents FROM hr.salaries",
            None,
            json!({"verdict": "refuse", "code": "access_denied"}),
        ),
    ];
    for (identity, when, sql, file, want) in &cases {
        let mut body = json!({"identity": identity, "source": "shop", "sql": sql, "at": when});
        if let Some(f) = file {
            body["file"] = json!(f);
        }
        let (status, x) = env.operator_post("/admin/policy/explain", body).await;
        assert_eq!(status, 200, "{x}");
        for (k, v) in want.as_object().unwrap() {
            assert_eq!(&x["effect"][k], v, "{identity} {sql} at {when}: {x:#}");
        }
    }
    // Every conditional rule is shown with how it came out, and the grants that allowed.
    let (_, x) = env
        .operator_post(
            "/admin/policy/explain",
            json!({"identity": "demo-agent", "source": "shop", "at": night,
               "sql": "SELECT sku FROM public.products"}),
        )
        .await;
    let rules: Vec<(String, String)> = x["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["rule"].as_str().unwrap().to_string(),
                r["result"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        rules,
        vec![
            ("no-night-deletes".to_string(), "not_matched".to_string()),
            ("small-night-reads".to_string(), "matched".to_string()),
            ("watch-products".to_string(), "matched".to_string()),
        ],
        "{x:#}"
    );
    assert!(
        x["verdict"]["deciding_rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r.as_str().unwrap().contains("role analyst")),
        "{x:#}"
    );
    // The explanation is the gateway's decision: the same call through MCP does the same.
    env.gateway.state.policy_clock.set(Some(at(22)));
    let a = call(
        &env.gateway.url(""),
        Some(&keys[0].1),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "SELECT id, email FROM public.customers"}),
    )
    .await;
    env.gateway.state.policy_clock.set(None);
    let rows = rows(&a);
    assert_eq!(rows.len(), 3, "the cap explain showed: {:?}", a.body);
    assert!(
        rows.iter()
            .all(|r| r["email"].as_str().unwrap().starts_with('*')),
        "the mask explain showed: {rows:?}"
    );
    let (status, body) = env
        .operator_post(
            "/admin/policy/explain",
            json!({"identity": "ghost", "source": "shop", "sql": "SELECT 1"}),
        )
        .await;
    assert_eq!(status, 404, "{body}");
}

/// The access state a simulation decides under is the state `policy apply` leaves: for
/// every identity and source, the profile of the file laid over the snapshot equals the
/// profile the gateway loads once the file is applied (PostgreSQL decides, the overlay
/// must agree).
#[tokio::test]
async fn a_file_laid_over_the_snapshot_is_the_file_applied() {
    use interlock::control::access_snapshot::AccessSnapshot;
    use interlock::control::profiles::load_profile;
    let (env, _keys) = setup().await;
    let again = "[[roles]]\nsource = \"shop\"\nname = \"analyst\"\nallow = [\"read public.orders\", \"read public.orders\"]\ndeny = [\"read public.orders.total_cents\"]\n\n[[roles]]\nsource = \"shop\"\nname = \"extra\"\nallow = [\"read public.products\"]\n\n[[grants]]\nidentity = \"replay-b\"\nsource = \"shop\"\nroles = [\"extra\"]\n\n[[redactions]]\nsource = \"shop\"\ncolumn = \"public.customers.email\"\nstrategy = \"hash\"\n";
    for file in [CANDIDATE, again, interlock::demo::ACCESS_TOML] {
        let parsed = AccessFile::parse(file).unwrap();
        let predicted = AccessSnapshot::load(&env.pool)
            .await
            .unwrap()
            .with_file(&parsed)
            .unwrap();
        apply(&env.pool, &parsed).await.unwrap();
        let client = env.pool.get().await.unwrap();
        let identities = client
            .query("SELECT id, name FROM identities", &[])
            .await
            .unwrap();
        for source in ["shop", "handbook"] {
            for r in &identities {
                let (id, name): (uuid::Uuid, String) = (r.get(0), r.get(1));
                let loaded = load_profile(&env.pool, id, source).await.unwrap();
                let laid = predicted.profile(&name, source).unwrap();
                assert_eq!(laid, loaded, "{name} on {source} after\n{file}");
            }
        }
    }
}

/// Token groups and claims are facts a replay keeps: an OAuth workload replays with zero
/// differences, and a candidate over claims predicts what the gateway then does.
#[tokio::test]
async fn groups_and_claims_of_access_tokens_replay_exactly() {
    use common::env::{demo_agent_token, oauth_demo_env};
    let (env, issuer, key) = oauth_demo_env().await;
    let live = "[[policies]]\nsource = \"shop\"\nname = \"t\"\n[[policies.rules]]\nkind = \"deny\"\nwhen = \"statement.class == 'write' && !('oncall' in caller.groups) && caller.claims.department != 'ops'\"\n";
    let candidate = "[[policies]]\nsource = \"shop\"\nname = \"t\"\n[[policies.rules]]\nkind = \"deny\"\nwhen = \"caller.claims.department == 'sales' && !('oncall' in caller.groups)\"\n";
    apply(&env.pool, &AccessFile::parse(live).unwrap())
        .await
        .unwrap();
    env.gateway.state.profiles.invalidate_all();
    let token =
        |groups: Value, department: &str| demo_agent_token(&issuer, &key, groups, department);
    let mut calls = Vec::new();
    for (groups, department) in [
        (json!(["oncall"]), "sales"),
        (json!(["analysts"]), "ops"),
        (json!(["analysts"]), "sales"),
        (json!([]), "hr"),
    ] {
        let t = token(groups, department);
        for sql in [
            "UPDATE public.orders SET status = 'shipped' WHERE id = 1",
            "SELECT id FROM public.orders WHERE id = 2",
        ] {
            calls.push((t.clone(), 10, sql.to_string(), vec![]));
        }
    }
    let before = run_calls(&env, &calls).await;
    let (_, same) = env
        .operator_post("/admin/policy/simulate", json!({"file": ""}))
        .await;
    assert_eq!(same["replayed"], json!(calls.len()), "{same:#}");
    assert_eq!(same["changed"], json!(0), "{same:#}");
    assert_eq!(same["drift"], json!(0), "{same:#}");
    let (_, report) = env
        .operator_post(
            "/admin/policy/simulate",
            json!({"file": candidate, "examples": 100}),
        )
        .await;
    apply(&env.pool, &AccessFile::parse(candidate).unwrap())
        .await
        .unwrap();
    env.gateway.state.profiles.invalidate_all();
    let after = run_calls(&env, &calls).await;
    let changed = assert_predicted(&env, &report, &before, &after).await;
    // The sales analyst's read is newly refused; the ops analyst's and hr's writes are
    // newly allowed or refused as their claims say.
    assert!(changed >= 2, "{report:#}");
    assert!(
        report["changes"]["newly_refused"].as_u64().unwrap_or(0) >= 1,
        "{report:#}"
    );
    assert!(
        report["changes"]["newly_allowed"].as_u64().unwrap_or(0) >= 1,
        "{report:#}"
    );
}

/// RUNTIME.md: a report-only rule that would have changed a call's answer publishes
/// `policy.reported` on the event stream (naming the rule, the caller, the request and what
/// it would have done), and one that would not have changed it publishes nothing.
#[tokio::test]
async fn a_report_only_rule_that_would_change_a_call_is_published_on_the_event_stream() {
    use futures_util::StreamExt;
    let (env, keys) = setup().await;
    let res = common::http::client()
        .get(env.gateway.url("/admin/events"))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut stream = res.bytes_stream();
    tokio::time::timeout(std::time::Duration::from_secs(5), stream.next())
        .await
        .expect("connected");
    let base = env.gateway.url("");
    let query = |key: String, sql: &'static str| {
        let base = base.clone();
        async move {
            call(
                &base,
                Some(&key),
                MODERN,
                "interlock_query",
                json!({"source_id": "shop", "sql": sql}),
            )
            .await
        }
    };
    // Not matched: no event. Then matched (the watch rule would deny a products read).
    let quiet = query(
        keys[1].1.clone(),
        "SELECT id FROM public.orders WHERE id = 1",
    )
    .await;
    let loud = query(
        keys[1].1.clone(),
        "SELECT sku FROM public.products WHERE id = 2",
    )
    .await;
    let loud_id = loud.headers["x-request-id"].to_str().unwrap().to_string();
    let quiet_id = quiet.headers["x-request-id"].to_str().unwrap().to_string();
    assert_eq!(
        loud.body["result"]["isError"],
        json!(false),
        "report-only: answered"
    );
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !seen.contains(&loud_id) {
        assert!(
            std::time::Instant::now() < deadline,
            "events so far: {seen}"
        );
        if let Ok(Some(Ok(chunk))) =
            tokio::time::timeout(std::time::Duration::from_secs(1), stream.next()).await
        {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
    let event = seen
        .split("\n\n")
        .find(|e| e.contains(&loud_id))
        .unwrap()
        .to_string();
    assert!(event.contains("event: policy.reported"), "{event}");
    let data: Value = serde_json::from_str(
        event
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(data["rule"], "watch-products", "{data}");
    assert_eq!(data["policy"], "hours", "{data}");
    assert_eq!(data["identity"], "replay-b", "{data}");
    assert_eq!(data["source"], "shop", "{data}");
    assert!(
        !seen.contains(&quiet_id),
        "an unchanged call published: {seen}"
    );
}
