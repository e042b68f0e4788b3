//! Activity over time (issue 31, first part): two replicas of one fleet serve calls, and
//! `GET /admin/activity` shows the fleet's minutes, per source and merged, agreeing with the
//! audit log call by call.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::env::demo_env_with;
use common::mcp::{call, MODERN};
use common::TestGateway;
use serde_json::{json, Value};

async fn activity(gw: &TestGateway, key: &str, query: &str) -> (u16, Value) {
    let res = common::http::client()
        .get(gw.url(&format!("/admin/activity{query}")))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

/// The governed calls' outcomes per source as the audit log has them.
async fn audited(control_db: &str) -> BTreeMap<(String, String), u64> {
    let db = common::admin(control_db).await;
    db.query(
        "SELECT coalesce(source_id, ''), outcome, count(*) FROM audit_records
          WHERE tool LIKE 'interlock\\_%' AND decision ? 'steps' GROUP BY 1, 2",
        &[],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| {
        let n: i64 = r.get(2);
        ((r.get(0), r.get(1)), n as u64)
    })
    .collect()
}

/// The same from the activity series: (source, outcome) summed over the window.
fn charted(body: &Value) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    for series in body["sources"].as_array().unwrap() {
        let source = series["source"].as_str().unwrap_or("").to_string();
        for b in series["buckets"].as_array().unwrap() {
            for (field, outcome) in [
                ("ok", "ok"),
                ("refused", "refused"),
                ("queued", "queued"),
                ("unavailable", "error"),
                ("cancelled", "cancelled"),
            ] {
                let n = b[field].as_u64().unwrap();
                if n > 0 {
                    *out.entry((source.clone(), outcome.to_string()))
                        .or_default() += n;
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn two_replicas_calls_are_charted_minute_by_minute_as_the_audit_log_has_them() {
    let env = demo_env_with(
        |s| s.activity.flush_interval_ms = 200,
        |s| s.cache_ttl_ms = Some(60_000),
    )
    .await;
    let second = TestGateway::start(env.gateway.settings.clone());
    let agent = Some(env.agent_key.as_str());
    for (i, gw) in [&env.gateway, &second].into_iter().enumerate() {
        let base = gw.url("");
        // Six new literals, then the first again: six misses and (the cache is per
        // replica) one hit on each replica.
        for n in [0, 1, 2, 3, 4, 5, 0] {
            let sql = format!("SELECT id FROM public.orders WHERE id = {}", i * 10 + n);
            let a = call(
                &base,
                agent,
                MODERN,
                "interlock_query",
                json!({"source_id": "shop", "sql": sql}),
            )
            .await;
            assert_eq!(a.status, 200);
        }
        // Refused (a table the role may not read), queued (a write), and a call that names
        // no source.
        call(
            &base,
            agent,
            MODERN,
            "interlock_query",
            json!({"source_id": "shop", "sql": "SELECT * FROM hr.salaries"}),
        )
        .await;
        call(&base, agent, MODERN, "interlock_query", json!({"source_id": "shop", "sql": format!("UPDATE public.orders SET status = 'x' WHERE id = {i}")})).await;
        call(&base, agent, MODERN, "interlock_list_sources", json!({})).await;
    }
    // Both replicas' minutes arrive within a few flushes, and then agree with the audit log.
    let expected = audited(&env.control_db).await;
    assert!(expected.values().sum::<u64>() >= 18, "{expected:?}");
    let deadline = Instant::now() + Duration::from_secs(15);
    let body = loop {
        let (status, body) =
            activity(&env.gateway, &env.operator_key, "?since=15m&bucket=60").await;
        assert_eq!(status, 200, "{body}");
        if charted(&body) == expected {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "activity {:?} never matched the audit log {expected:?}",
            charted(&body)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(body["bucket_secs"], 60);
    assert_eq!(body["retain_hours"], 48);
    // The fleet's series is the sum of the sources'.
    let fleet_calls: u64 = body["fleet"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["calls"].as_u64().unwrap())
        .sum();
    assert_eq!(fleet_calls, expected.values().sum::<u64>());
    // Latency percentiles, cache, refusals by code.
    let shop = body["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "shop")
        .unwrap();
    let last = shop["buckets"].as_array().unwrap().last().unwrap().clone();
    let (p50, p99) = (
        last["p50_ms"].as_f64().unwrap(),
        last["p99_ms"].as_f64().unwrap(),
    );
    assert!(p50 > 0.0 && p50 <= p99, "{last}");
    // Cache hits and misses, as the audit log has them.
    let logged: Vec<(i64, i64)> = common::admin(&env.control_db)
        .await
        .query(
            "SELECT count(*) FILTER (WHERE cache_hit), count(*) FILTER (WHERE NOT cache_hit)
               FROM audit_records WHERE source_id = 'shop' AND outcome = 'ok' AND action = 'read'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let (hits, misses) = shop["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .fold((0, 0), |(h, m), b| {
            (
                h + b["cache_hits"].as_u64().unwrap(),
                m + b["cache_misses"].as_u64().unwrap(),
            )
        });
    assert_eq!(vec![(hits as i64, misses as i64)], logged, "{shop}");
    assert!(hits >= 1 && misses >= 12, "{shop}");
    assert!(last["cache_hit_ratio"].is_number(), "{last}");
    let refused_codes: u64 = shop["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["refused_by_code"]["access_denied"].as_u64())
        .sum();
    assert_eq!(refused_codes, 2, "{shop}");
    // The top talker is the demo agent, with every call it made.
    let top = &body["top_talkers"][0];
    assert_eq!(top["identity"], "demo-agent", "{body}");
    assert_eq!(
        top["calls"].as_u64().unwrap(),
        expected.values().sum::<u64>()
    );
    assert_eq!(top["queued"], 2);

    // Circuit history: a forced open and a reset, each with its cause, on each replica.
    for (action, reason) in [
        ("open", "maintenance at 09:00"),
        ("reset", "maintenance done"),
    ] {
        let res = common::http::client()
            .post(env.gateway.url("/admin/sources/shop/circuit"))
            .bearer_auth(&env.operator_key)
            .json(&json!({"action": action, "reason": reason}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
    }
    // Approvals over time: the two queued writes, one of them approved.
    let listed =
        common::http::get_json(&env.gateway.url("/admin/approvals"), &env.approver_key).await;
    let first = listed["approvals"][0]["id"].as_str().unwrap().to_string();
    common::approvals::approve(&env.gateway, &env.approver_key, &first, json!({})).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    let body = loop {
        let (_, body) = activity(&env.gateway, &env.operator_key, "?since=15m&bucket=60").await;
        let transitions = body["circuit"].as_array().cloned().unwrap_or_default();
        let opened = transitions.iter().filter(|t| {
            t["to_state"] == "open"
                && t["reason"]
                    .as_str()
                    .unwrap_or("")
                    .contains("maintenance at 09:00")
        });
        let replicas: std::collections::BTreeSet<String> = opened
            .map(|t| t["replica"].as_str().unwrap().to_string())
            .collect();
        let decided: u64 = body["approvals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["decided"].as_u64().unwrap())
            .sum();
        if replicas.len() == 2 && decided == 1 {
            break body;
        }
        assert!(Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let newest = &body["circuit"][0];
    assert_eq!(newest["source_id"], "shop");
    assert!(
        newest["reason"]
            .as_str()
            .unwrap()
            .contains("maintenance done"),
        "newest first: {newest}"
    );
    // Who forced it, on every replica.
    for forced in body["circuit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["to_state"] == "open")
    {
        assert!(
            forced["reason"].as_str().unwrap().contains("demo-operator"),
            "who forced it: {forced}"
        );
    }
    let approvals = body["approvals"].as_array().unwrap();
    let created: u64 = approvals
        .iter()
        .map(|b| b["created"].as_u64().unwrap())
        .sum();
    assert_eq!(created, 2, "{approvals:?}");
    assert_eq!(approvals.last().unwrap()["pending"], 1, "one still waits");

    // One source only.
    let (_, one) = activity(&env.gateway, &env.operator_key, "?since=15m&source=shop").await;
    let only: Vec<&Value> = one["sources"].as_array().unwrap().iter().collect();
    assert_eq!(only.len(), 1);
    assert_eq!(only[0]["source"], "shop");

    // Bad windows are named; the series are operators' only.
    for (query, status) in [
        ("?bucket=90", 400),
        ("?bucket=30", 400),
        ("?since=1h&until=2000-01-01T00:00:00Z", 400),
        ("?since=yesterday", 400),
    ] {
        let (got, body) = activity(&env.gateway, &env.operator_key, query).await;
        assert_eq!(got, status, "{query}: {body}");
        assert!(body["error"].as_str().is_some(), "{body}");
    }
    let (status, _) = activity(&env.gateway, &env.agent_key, "").await;
    assert!(status == 401 || status == 403, "{status}");
}

/// A day of minutes from 50 sources (72,000 rows, as two replicas would leave them for a
/// busy fleet) is answered whole: every call counted once, the default buckets few enough
/// for the console to draw. Prints how long the answer took (BENCHMARKS.md, "Activity").
#[tokio::test]
async fn a_day_of_fifty_sources_is_answered_whole() {
    let env = demo_env_with(|_| {}, |_| {}).await;
    let db = common::admin(&env.control_db).await;
    common::activity::seed_day(&db, 50, false).await;
    for (query, sources) in [("?since=24h", 50), ("?since=24h&source=source-7", 1)] {
        let started = Instant::now();
        let (status, body) = activity(&env.gateway, &env.operator_key, query).await;
        let took = started.elapsed();
        assert_eq!(status, 200, "{body}");
        let buckets = body["fleet"].as_array().unwrap();
        assert!(buckets.len() <= 49, "{} buckets", buckets.len());
        let calls: u64 = buckets.iter().map(|b| b["calls"].as_u64().unwrap()).sum();
        // The window starts at a minute boundary 24 h back: 1,439 or 1,440 whole minutes.
        let per_minute = common::activity::CALLS_PER_MINUTE * sources;
        let minutes = calls / per_minute;
        assert!((1439..=1440).contains(&minutes), "{calls} calls");
        assert_eq!(calls % per_minute, 0);
        assert_eq!(body["sources"].as_array().unwrap().len() as u64, sources);
        let bytes = body.to_string().len();
        println!("activity {query}: {} ms, {bytes} bytes", took.as_millis());
    }
}

/// The fleet table's view of a day of 50 sources (`sources=summary`): each source's totals
/// and a strip instead of its buckets whole, the same calls as the buckets add up to, a
/// fraction of the bytes. Prints both sizes (BENCHMARKS.md, "Activity").
#[tokio::test]
async fn a_day_of_fifty_sources_in_brief_adds_up_to_the_buckets_in_a_fraction_of_the_bytes() {
    let env = demo_env_with(|_| {}, |_| {}).await;
    let db = common::admin(&env.control_db).await;
    common::activity::seed_day(&db, 50, true).await;
    let (_, full) = activity(&env.gateway, &env.operator_key, "?since=24h").await;
    let window = format!(
        "?since={}&until={}&bucket={}",
        full["since"].as_str().unwrap(),
        full["until"].as_str().unwrap(),
        full["bucket_secs"]
    )
    .replace('+', "%2B");
    let (_, full) = activity(&env.gateway, &env.operator_key, &window).await;
    let (status, brief) = activity(
        &env.gateway,
        &env.operator_key,
        &format!("{window}&sources=summary"),
    )
    .await;
    assert_eq!(status, 200, "{brief}");
    assert_eq!(
        brief["fleet"], full["fleet"],
        "the fleet's buckets are the same"
    );
    let by_source = |body: &Value| -> BTreeMap<String, Value> {
        body["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["source"].as_str().unwrap_or("").to_string(), s.clone()))
            .collect()
    };
    let (full_sources, brief_sources) = (by_source(&full), by_source(&brief));
    assert_eq!(full_sources.len(), brief_sources.len());
    for (name, whole) in &full_sources {
        let b = &brief_sources[name];
        let buckets = whole["buckets"].as_array().unwrap();
        for field in [
            "calls",
            "ok",
            "refused",
            "queued",
            "unavailable",
            "cancelled",
            "cache_hits",
            "cache_misses",
        ] {
            let summed: u64 = buckets.iter().map(|x| x[field].as_u64().unwrap()).sum();
            assert_eq!(b["totals"][field].as_u64(), Some(summed), "{name} {field}");
        }
        let first_down = buckets.iter().find(|x| x["unavailable"].as_u64() > Some(0));
        assert_eq!(
            b["first_unavailable"],
            first_down.map_or(Value::Null, |x| x["at"].clone()),
            "{name}"
        );
        // The strip: per bucket of the window, its calls and its failed calls.
        let since = chrono::DateTime::parse_from_rfc3339(full["since"].as_str().unwrap()).unwrap();
        let width = full["bucket_secs"].as_i64().unwrap();
        let calls = b["strip"]["calls"].as_array().unwrap();
        let failed = b["strip"]["failed"].as_array().unwrap();
        for x in buckets {
            let at = chrono::DateTime::parse_from_rfc3339(x["at"].as_str().unwrap()).unwrap();
            let slot = usize::try_from((at - since).num_seconds() / width).unwrap();
            assert_eq!(calls[slot], x["calls"], "{name} at {at}");
            let bad = x["refused"].as_u64().unwrap() + x["unavailable"].as_u64().unwrap();
            assert_eq!(failed[slot].as_u64(), Some(bad), "{name} at {at}");
        }
        let strip_calls: u64 = calls.iter().map(|c| c.as_u64().unwrap()).sum();
        assert_eq!(
            Some(strip_calls),
            b["totals"]["calls"].as_u64(),
            "{name}: the strip holds every call"
        );
        assert!(b["totals"]["p99_ms"].is_number(), "{name}: {}", b["totals"]);
    }
    assert_eq!(
        brief_sources["source-3"]["totals"]["unavailable"]
            .as_u64()
            .map(|n| n > 0),
        Some(true),
        "the failing source's unavailable calls are counted"
    );
    let size = |v: &Value| v.to_string().len();
    let (full_bytes, brief_bytes) = (size(&full), size(&brief));
    let (full_sources, brief_sources) = (size(&full["sources"]), size(&brief["sources"]));
    println!(
        "activity of a day of 50 sources: {full_bytes} bytes with every bucket ({full_sources} of \
         them the sources'), {brief_bytes} in brief ({brief_sources})"
    );
    assert!(
        brief_sources * 10 < full_sources,
        "the sources in brief take {brief_sources} bytes against {full_sources} whole"
    );
}
