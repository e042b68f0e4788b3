//! Policy rules with CEL conditions, through `POST /mcp` on real PostgreSQL: each fact the
//! conditions read, each effect, time windows on an injected clock, OAuth groups and
//! claims, lineage through CTEs, aliases and subqueries, fail-closed evaluation errors,
//! report-only rules that never change an answer, and access files refused whole.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use chrono::TimeZone;
use common::env::{demo_agent_token, demo_env, oauth_demo_env, DemoEnv};
use common::mcp::{call, Answer, MODERN};
use interlock::control::policy_file::{apply, AccessFile};
use serde_json::{json, Value};

const WRITE: &str = "UPDATE public.orders SET status = 'shipped' WHERE id = 1";
const READ: &str = "SELECT id, name FROM public.customers WHERE id <= 5 ORDER BY id";

/// Replaces policy `t` on shop with `rules` (TOML tables) and drops cached profiles.
async fn policy(env: &DemoEnv, rules: &[&str]) {
    let mut text = String::from("[[policies]]\nsource = \"shop\"\nname = \"t\"\n");
    for r in rules {
        text.push_str("[[policies.rules]]\n");
        text.push_str(r);
        text.push('\n');
    }
    if rules.is_empty() {
        text.push_str("rules = []\n");
    }
    apply(
        &env.pool,
        &AccessFile::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}")),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{text}"));
    env.gateway.state.profiles.invalidate_all();
}

fn at(hour: u32) -> chrono::DateTime<chrono::Utc> {
    // Friday 2026-12-04, in UTC (the default `[policy] time_zone`).
    chrono::Utc
        .with_ymd_and_hms(2026, 12, 4, hour, 15, 0)
        .unwrap()
}

/// `ok`, `queued` or `refused:<code>`.
fn outcome(a: &Answer) -> String {
    if a.status != 200 {
        return format!(
            "refused:{}",
            a.body["error"]["data"]["code"].as_str().unwrap_or("?")
        );
    }
    match a.body["result"]["structuredContent"]["status"].as_str() {
        Some("queued") => "queued".into(),
        _ => "ok".into(),
    }
}

async fn query(env: &DemoEnv, key: &str, sql: &str) -> Answer {
    call(
        &env.gateway.url(""),
        Some(key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": sql}),
    )
    .await
}

#[tokio::test]
async fn conditions_over_each_fact_decide_each_effect() {
    let env = demo_env().await;
    let clock = &env.gateway.state.policy_clock;
    let night = r#"kind = "deny"
when = "statement.class == 'write' && 'public.orders' in statement.tables_written && (request.hour < 9 || request.hour >= 18) && !('oncall' in caller.groups)"
message = "Orders change only in business hours (09–18 UTC) unless you are on call.""#;
    // (rules, clock hour, sql, expected outcome, the rule's result in the audit record)
    let cases: Vec<(Vec<&str>, u32, &str, &str, &str)> = vec![
        // Time windows on the injected clock.
        (vec![night], 22, WRITE, "refused:policy_denied", "matched"),
        (vec![night], 10, WRITE, "queued", "not_matched"),
        (vec![night], 8, WRITE, "refused:policy_denied", "matched"),
        (vec![night], 22, READ, "ok", "not_matched"),
        // The caller, the request and the statement.
        (vec!["kind = \"deny\"\nwhen = \"caller.identity == 'demo-agent' && caller.kind == 'agent' && caller.credential == 'api_key'\""], 10, READ, "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"'analyst' in caller.roles && request.tool == 'interlock_query' && request.source == 'shop'\""], 10, READ, "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"request.adapter == 'mcp' && request.dialect == '2026-07-28'\""], 10, READ, "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"request.weekday == 5 && request.date == '2026-12-04' && request.minute == 15\""], 10, READ, "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"request.weekday == 0\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"statement.explain\""], 10, "EXPLAIN SELECT id FROM public.orders", "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"statement.explain\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"'lower' in statement.functions\""], 10, "SELECT lower(name) AS n FROM public.customers WHERE id = 1", "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"'string' in statement.function_families\""], 10, "SELECT lower(name) AS n FROM public.customers WHERE id = 1", "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"statement.reads_clock\""], 10, "SELECT now() AS t", "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"statement.row_cap > 500\""], 10, READ, "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"statement.deletes_rows\""], 10, "DELETE FROM public.orders WHERE id = 1", "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"statement.deletes_rows\""], 10, WRITE, "queued", "not_matched"),
        // Lineage: the column behind an alias, a CTE and a subquery is still the column.
        (vec!["kind = \"deny\"\nwhen = \"'public.customers.name' in statement.columns_read\""], 10, "WITH x AS (SELECT name AS who FROM public.customers) SELECT who AS contact FROM x", "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"'public.customers.name' in statement.columns_returned\""], 10, "SELECT c FROM (SELECT upper(name) AS c FROM public.customers) s", "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"'public.customers.name' in statement.columns_returned\""], 10, "SELECT id FROM public.customers WHERE name = 'x'", "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"'public.customers' in statement.tables_read\""], 10, "SELECT o.id FROM public.orders o WHERE o.customer_id IN (SELECT c.id FROM public.customers c)", "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"'public.orders.status' in statement.columns_written\""], 10, WRITE, "refused:policy_denied", "matched"),
        // A deny of a resource, only when the condition holds.
        (vec!["kind = \"deny\"\naction = \"read\"\nresource = \"public.customers.name\"\nwhen = \"request.hour >= 18\""], 22, READ, "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\naction = \"read\"\nresource = \"public.customers.name\"\nwhen = \"request.hour >= 18\""], 10, READ, "ok", "not_matched"),
        // A read a require_approval rule applies to waits for an approver.
        (vec!["kind = \"require_approval\"\nwhen = \"'public.customers' in statement.tables_read\""], 10, READ, "queued", "matched"),
        (vec!["kind = \"require_approval\"\nwhen = \"'public.customers' in statement.tables_read\""], 10, "SELECT id FROM public.orders", "ok", "not_matched"),
        // Fail closed: a missing claim is an evaluation error, so the deny applies.
        (vec!["kind = \"deny\"\nwhen = \"caller.claims.department == 'sales'\""], 10, READ, "refused:policy_denied", "error"),
        // A report-only rule never changes the answer.
        (vec!["kind = \"deny\"\nmode = \"report\"\nwhen = \"true\""], 10, READ, "ok", "matched"),
        // Every fact's twin: the same condition over a value the fact does not hold must
        // not match (a fact never populated would make the deny apply through an error).
        (vec!["kind = \"deny\"\nwhen = \"caller.identity == 'someone-else'\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"caller.kind == 'operator'\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"caller.credential == 'oauth'\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"'auditor' in caller.roles\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"request.tool == 'interlock_discover'\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"request.source == 'handbook'\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"request.adapter == 'proxy'\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"request.dialect == '2025-11-25'\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"request.date == '2026-12-05'\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"request.minute == 16\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"'upper' in statement.functions\""], 10, "SELECT lower(name) AS n FROM public.customers WHERE id = 1", "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"'json' in statement.function_families\""], 10, "SELECT lower(name) AS n FROM public.customers WHERE id = 1", "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"'pg_catalog.lower' in statement.functions\""], 10, "SELECT lower(name) AS n FROM public.customers WHERE id = 1", "refused:policy_denied", "matched"),
        (vec!["kind = \"deny\"\nwhen = \"statement.reads_clock\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"statement.row_cap > 100000\""], 10, READ, "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"'public.orders.status' in statement.columns_read\""], 10, "WITH x AS (SELECT name AS who FROM public.customers) SELECT who AS contact FROM x", "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"'public.products' in statement.tables_read\""], 10, "SELECT o.id FROM public.orders o WHERE o.customer_id IN (SELECT c.id FROM public.customers c)", "ok", "not_matched"),
        (vec!["kind = \"deny\"\nwhen = \"'public.orders.total_cents' in statement.columns_written\""], 10, WRITE, "queued", "not_matched"),
    ];
    for (rules, hour, sql, want, result) in &cases {
        policy(&env, rules).await;
        clock.set(Some(at(*hour)));
        let a = query(&env, &env.agent_key, sql).await;
        assert_eq!(
            outcome(&a),
            *want,
            "{rules:?} at {hour}h: {sql}\n{:?}",
            a.body
        );
        // The rule decided it by its condition, not through an evaluation error (which
        // applies a deny too: fail closed), and the twin's condition held false.
        // (The record keeps the rules that matched or failed; a rule that did not match
        // leaves no entry.)
        let id = a.headers["x-request-id"].to_str().unwrap().to_string();
        let record = env.audit_of(&id).await;
        let kept = &record["decision"]["policy"];
        match *result {
            "not_matched" => assert!(
                kept.as_array()
                    .is_none_or(|k| k.iter().all(|r| r["result"] == "not_matched")),
                "{rules:?} at {hour}h: {sql}\n{record}"
            ),
            _ => assert_eq!(
                kept[0]["result"], *result,
                "{rules:?} at {hour}h: {sql}\n{record}"
            ),
        }
        if want.starts_with("refused:policy_denied") && rules[0] == night {
            let reason = a.body["error"]["data"]["reason"]
                .as_str()
                .unwrap_or_default();
            assert!(
                reason.contains("business hours"),
                "the operator's message: {reason}"
            );
        }
    }
    clock.set(None);
}

#[tokio::test]
async fn an_approved_write_is_rechecked_over_the_facts_of_the_call_that_queued_it() {
    let env = demo_env().await;
    let clock = &env.gateway.state.policy_clock;
    policy(
        &env,
        &["kind = \"deny\"\nwhen = \"statement.class == 'write' && request.hour >= 18\""],
    )
    .await;
    clock.set(Some(at(10)));
    let id = common::approvals::queue(&env.gateway, &env.agent_key, "shop", WRITE).await;
    let kept: Value = common::admin(&env.control_db)
        .await
        .query_one(
            "SELECT coalesce(call_facts, 'null') FROM approvals WHERE id = $1::text::uuid",
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        kept["time"], "2026-12-04T10:15:00Z",
        "the approval keeps the call's facts: {kept}"
    );
    // Approved and run in the evening: the rule is evaluated for the call made at 10:15.
    clock.set(Some(at(22)));
    common::approvals::approve(
        &env.gateway,
        &env.approver_key,
        &id,
        json!({"reason": "ok"}),
    )
    .await;
    let a =
        common::approvals::wait(&env.gateway, &env.approver_key, &id, common::approvals::ran).await;
    assert_eq!(a["state"], "executed", "{a}");
    // A rule added since still applies to it.
    clock.set(Some(at(10)));
    let id = common::approvals::queue(&env.gateway, &env.agent_key, "shop", WRITE).await;
    policy(
        &env,
        &["kind = \"deny\"\nwhen = \"'public.orders' in statement.tables_written\""],
    )
    .await;
    common::approvals::approve(
        &env.gateway,
        &env.approver_key,
        &id,
        json!({"reason": "ok"}),
    )
    .await;
    let a =
        common::approvals::wait(&env.gateway, &env.approver_key, &id, common::approvals::ran).await;
    assert_eq!(a["state"], "failed", "{a}");
    assert!(
        a["error"]
            .as_str()
            .unwrap_or_default()
            .contains("Policy t refuses"),
        "{a}"
    );
    clock.set(None);
}

#[tokio::test]
async fn conditional_caps_masks_and_approvals_take_effect() {
    let env = demo_env().await;
    // A cap for agents, a further mask, and three approvals for order writes.
    policy(
        &env,
        &[
            "kind = \"max_rows\"\nvalue = 2\nwhen = \"caller.kind == 'agent'\"",
            "kind = \"mask\"\nresource = \"public.customers.name\"\nstrategy = \"redact\"\nwhen = \"request.tool == 'interlock_query'\"",
            "kind = \"require_approval\"\nvalue = 3\nwhen = \"'public.orders' in statement.tables_written\"",
        ],
    )
    .await;
    let a = query(&env, &env.agent_key, READ).await;
    assert_eq!(outcome(&a), "ok", "{:?}", a.body);
    let rows = common::mcp::rows(&a);
    assert_eq!(rows.len(), 2, "capped at 2: {rows:?}");
    assert!(
        rows.iter().all(|r| r["name"] == "[REDACTED]"),
        "masked further: {rows:?}"
    );
    // A masked column cannot be filtered on (the mask's default), nor unmasked by a rule.
    let f = query(
        &env,
        &env.agent_key,
        "SELECT id FROM public.customers WHERE name = 'x'",
    )
    .await;
    assert_eq!(outcome(&f), "refused:masked_column_misuse", "{:?}", f.body);
    let w = query(&env, &env.agent_key, WRITE).await;
    assert_eq!(outcome(&w), "queued", "{:?}", w.body);
    let id = w.body["result"]["structuredContent"]["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    let db = common::admin(&env.control_db).await;
    let n: i32 = db
        .query_one(
            "SELECT approvals_required FROM approvals WHERE id = $1::text::uuid",
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 3);
    let audit = env.last_audit().await;
    let rules = audit["decision"]["policy"]
        .as_array()
        .expect("policy outcomes");
    assert!(
        rules
            .iter()
            .any(|r| r["effect"] == "require 3 approval(s)" && r["result"] == "matched"),
        "{rules:?}"
    );
}

#[tokio::test]
async fn no_condition_loosens_what_roles_and_masks_deny() {
    let env = demo_env().await;
    // Rules only restrict: with every condition true, hr stays unreadable and email masked.
    policy(
        &env,
        &[
            "kind = \"max_rows\"\nvalue = 1000\nwhen = \"true\"",
            "kind = \"mask\"\nresource = \"public.customers.email\"\nstrategy = \"partial\"\nkeep_last = 40\nallow_filter = true\nwhen = \"true\"",
        ],
    )
    .await;
    let hr = query(&env, &env.agent_key, "SELECT amount_cents FROM hr.salaries").await;
    assert_eq!(outcome(&hr), "refused:access_denied");
    let email = query(
        &env,
        &env.agent_key,
        "SELECT email FROM public.customers WHERE id = 42",
    )
    .await;
    let e = common::mcp::rows(&email)[0]["email"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        e.starts_with('*'),
        "the source's partial mask (12 kept) stays: {e}"
    );
    let filtered = query(
        &env,
        &env.agent_key,
        "SELECT id FROM public.customers WHERE email = 'x'",
    )
    .await;
    assert_eq!(
        outcome(&filtered),
        "refused:masked_column_misuse",
        "allow_filter of a rule cannot loosen the source's mask"
    );
}

#[tokio::test]
async fn report_only_rules_answer_byte_identically_and_record_what_they_would_do() {
    let env = demo_env().await;
    policy(&env, &[]).await;
    let plain = query(&env, &env.agent_key, READ).await;
    policy(
        &env,
        &[
            "name = \"night-deny\"\nkind = \"deny\"\nmode = \"report\"\nwhen = \"'public.customers' in statement.tables_read\"",
            "name = \"cap\"\nkind = \"max_rows\"\nvalue = 1\nmode = \"report\"\nwhen = \"true\"",
            "name = \"quiet\"\nkind = \"deny\"\nmode = \"report\"\nwhen = \"caller.identity == 'nobody'\"",
        ],
    )
    .await;
    let reported = query(&env, &env.agent_key, READ).await;
    assert_eq!(
        serde_json::to_string(&plain.body["result"]).unwrap(),
        serde_json::to_string(&reported.body["result"]).unwrap(),
        "report-only rules change nothing in the answer"
    );
    let audit = env.last_audit().await;
    let rules = audit["decision"]["policy"]
        .as_array()
        .expect("policy outcomes");
    let by = |name: &str| {
        rules
            .iter()
            .find(|r| r["rule"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert_eq!(by("night-deny")["mode"], "report");
    assert_eq!(
        by("night-deny")["would"]["refuse"]["code"],
        "policy_denied",
        "{rules:?}"
    );
    assert_eq!(by("cap")["would"]["row_cap"], 1, "{rules:?}");
    assert_eq!(
        by("quiet"),
        Value::Null,
        "rules that did not match stay out of the record"
    );
    let metrics = common::http::client()
        .get(env.gateway.url("/metrics"))
        .header("Authorization", format!("Bearer {}", env.operator_key))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for (rule, outcome) in [
        ("night-deny", "would_change"),
        ("cap", "would_change"),
        ("quiet", "not_matched"),
    ] {
        assert!(
            metrics
                .lines()
                .any(|l| l.starts_with("interlock_policy_rule_evaluations_total")
                    && l.contains(&format!("rule=\"{rule}\""))
                    && l.contains(&format!("outcome=\"{outcome}\""))
                    && l.contains("mode=\"report\"")),
            "{rule} {outcome} in /metrics"
        );
    }
}

#[tokio::test]
async fn access_files_with_a_wrong_condition_are_refused_whole() {
    let env = demo_env().await;
    policy(&env, &["kind = \"deny\"\nwhen = \"request.hour == 3\""]).await;
    let cases = [
        ("request.hr == 3", "unknown fact request.hr", "1:8"),
        (
            "request.hour == '3'",
            "int and string cannot be equal",
            "1:14",
        ),
        ("request.hour ==", "does not parse", "1:16"),
        (
            "statement.columns_read.exists(a, statement.columns_read.exists(b, a == b))",
            "evaluation steps",
            "1:30",
        ),
    ];
    for (condition, words, position) in cases {
        let text = format!(
            "[[identities]]\nname = \"new-one\"\nkind = \"agent\"\n[[policies]]\nsource = \"shop\"\nname = \"t\"\n[[policies.rules]]\nname = \"bad\"\nkind = \"deny\"\nwhen = {condition:?}\n"
        );
        let e = apply(&env.pool, &AccessFile::parse(&text).unwrap())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("policy \"t\" rule \"bad\"") && e.contains(words) && e.contains(position),
            "{e}"
        );
    }
    // Nothing was applied: the identity is absent and the old rule still stands.
    let db = common::admin(&env.control_db).await;
    let n: i64 = db
        .query_one(
            "SELECT count(*) FROM identities WHERE name = 'new-one'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
    let c: String = db
        .query_one(
            "SELECT condition FROM policy_rules WHERE source_id = 'shop' AND policy_name = 't'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(c, "request.hour == 3");
}

#[tokio::test]
async fn group_and_claim_conditions_read_the_access_token() {
    let (env, issuer, key) = oauth_demo_env().await;
    policy(
        &env,
        &["kind = \"deny\"\nwhen = \"statement.class == 'write' && !('oncall' in caller.groups) && caller.claims.department != 'ops'\""],
    )
    .await;
    let token =
        |groups: Value, department: &str| demo_agent_token(&issuer, &key, groups, department);
    let cases = [
        (json!(["oncall"]), "sales", "queued"),
        (json!(["analysts"]), "ops", "queued"),
        (json!(["analysts"]), "sales", "refused:policy_denied"),
        (json!([]), "sales", "refused:policy_denied"),
    ];
    for (groups, department, want) in cases {
        let a = query(&env, &token(groups.clone(), department), WRITE).await;
        assert_eq!(outcome(&a), want, "{groups} {department}: {:?}", a.body);
    }
}

/// "A read of customers by an agent waits for a human": the read is queued, the approver
/// sees what it reads (it changes nothing), and once approved it runs as its requester under
/// the caps and masks of today's policy; its rows reach the requester through
/// `interlock_approval_status` and nobody else.
#[tokio::test]
async fn a_read_held_for_approval_runs_once_approved_and_only_its_requester_sees_the_rows() {
    use common::approvals::{approve, show, status, wait};
    let env = demo_env().await;
    policy(
        &env,
        &["kind = \"require_approval\"\nvalue = 1\nwhen = \"'public.customers.email' in statement.columns_returned && caller.kind == 'agent'\"\nmessage = \"Agents read contact data only with a human's approval.\"",
          "kind = \"max_rows\"\nvalue = 2"],
    )
    .await;
    let sql = "SELECT id, email FROM public.customers WHERE id <= 5 ORDER BY id";
    let a = query(&env, &env.agent_key, sql).await;
    assert_eq!(outcome(&a), "queued", "{:?}", a.body);
    let id = a.body["result"]["structuredContent"]["approval_id"]
        .as_str()
        .unwrap()
        .to_string();
    let audit: Value = env
        .pool
        .get()
        .await
        .unwrap()
        .query_one(
            "SELECT to_jsonb(a) FROM audit_records a WHERE approval_id = $1::text::uuid AND tool = 'interlock_query'",
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(audit["action"], "read", "{audit}");
    assert_eq!(
        audit["decision"]["replay"]["effect"],
        json!({"verdict": "queue", "approvals": 1})
    );
    // The approver sees a read: what it reads, masked how, capped where.
    let shown = wait(&env.gateway, &env.approver_key, &id, |a| {
        a["preview"]["mode"] == "read"
    })
    .await;
    assert_eq!(shown["touches"]["action"], "read", "{shown:#}");
    assert_eq!(shown["preview"]["changes_nothing"], true, "{shown:#}");
    assert_eq!(shown["preview"]["row_cap"], 2, "{shown:#}");
    assert_eq!(
        shown["preview"]["columns"][1]["masked"], "partial(12)",
        "{shown:#}"
    );
    // Parameters cannot be kept for later: such a read is refused, saying why.
    let p = call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": "SELECT email FROM public.customers WHERE id = $1", "params": [1]}),
    )
    .await;
    assert_eq!(
        outcome(&p),
        "refused:approval_needs_literals",
        "{:?}",
        p.body
    );
    // Approved, it runs as the requester; the rows are masked and capped.
    approve(
        &env.gateway,
        &env.approver_key,
        &id,
        json!({"reason": "ok for the campaign"}),
    )
    .await;
    let done = wait(&env.gateway, &env.approver_key, &id, |a| {
        a["state"] == "executed" || a["state"] == "failed"
    })
    .await;
    assert_eq!(done["state"], "executed", "{done:#}");
    // The admin API (approver and operator, one approval and the list) never carries the
    // rows: only the requester reads them.
    for key in [&env.approver_key, &env.operator_key] {
        let one = show(&env.gateway, key, &id).await;
        assert!(
            one["result"].is_null() && one["result_withheld"] == true,
            "{one:#}"
        );
        let list =
            common::http::get_json(&env.gateway.url("/admin/approvals?state=executed"), key).await;
        assert!(
            list["approvals"].as_array().is_some_and(|a| !a.is_empty())
                && !list.to_string().contains("@example.com"),
            "{list}"
        );
    }
    let answer = status(&env.gateway, &env.agent_key, &id).await;
    let result = &answer["result"];
    let rows = result["returning"]["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer:#}"));
    assert_eq!(result["returning"]["truncated"], "row_limit", "{result:#}");
    assert_eq!(rows.len(), 2, "{result:#}");
    assert_eq!(rows[0]["id"], 1);
    assert!(
        rows.iter()
            .all(|r| r["email"].as_str().unwrap().starts_with('*')),
        "{rows:?}"
    );
    // Nobody else, approver included, is handed the rows through the agent's tool.
    let other = env.new_agent("curious-agent", None).await;
    let theirs = call(
        &env.gateway.url(""),
        Some(&other),
        MODERN,
        "interlock_approval_status",
        json!({"approval_id": id}),
    )
    .await;
    assert_ne!(outcome(&theirs), "ok", "{:?}", theirs.body);
    // The execution's own records say it was a read.
    let executed: Value = env
        .pool
        .get()
        .await
        .unwrap()
        .query_one(
            "SELECT to_jsonb(a) FROM audit_records a WHERE approval_id = $1::text::uuid AND tool = 'approval.outcome'",
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(executed["action"], "read", "{executed}");
    assert_eq!(
        show(&env.gateway, &env.approver_key, &id).await["state"],
        "executed"
    );
}
