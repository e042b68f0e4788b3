//! Approvers approve the effect, not a string: the preview of a queued write (explain or a
//! rolled-back dry run) and the bound the write is held to when it runs, on real
//! PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::approvals;
use common::env::{demo_env_with, DemoEnv};
use common::http::client;
use common::mcp::{call, MODERN};
use interlock::control::sources::PreviewMode;
use serde_json::{json, Value};

async fn env(preview: PreviewMode) -> DemoEnv {
    demo_env_with(
        |s| s.approvals.preview_lock_timeout_ms = 300,
        |src| src.approval_preview = Some(preview),
    )
    .await
}

/// Queues `sql` on shop as the demo agent; returns the approval id.
async fn queue(env: &DemoEnv, sql: &str) -> String {
    approvals::queue(&env.gateway, &env.agent_key, "shop", sql).await
}

/// The approval once its preview is stored.
async fn previewed(env: &DemoEnv, id: &str) -> Value {
    approvals::wait(&env.gateway, &env.operator_key, id, approvals::previewed).await
}

async fn approve(env: &DemoEnv, id: &str, body: Value) -> Value {
    approvals::approve(&env.gateway, &env.approver_key, id, body).await
}

/// The approval once it has run (executed or failed).
async fn ran(env: &DemoEnv, id: &str) -> Value {
    approvals::wait(&env.gateway, &env.operator_key, id, approvals::ran).await
}

async fn count(env: &DemoEnv, sql: &str) -> i64 {
    common::admin(&env.shop_db)
        .await
        .query_one(sql, &[])
        .await
        .expect("count")
        .get(0)
}

const HELD: &str = "SELECT count(*) FROM public.orders WHERE status = 'held'";

#[tokio::test]
async fn a_dry_run_preview_counts_exactly_what_the_write_then_does() {
    let env = env(PreviewMode::DryRun).await;
    let customer7 = count(
        &env,
        "SELECT count(*) FROM public.orders WHERE customer_id = 7",
    )
    .await;
    assert!(
        customer7 > 1,
        "the fixture has several orders for customer 7"
    );
    let id = queue(
        &env,
        "UPDATE public.orders SET status = 'held' WHERE customer_id = 7 RETURNING id, status",
    )
    .await;
    let a = previewed(&env, &id).await;
    let preview = &a["preview"];
    assert_eq!(preview["mode"], "dry_run", "{a}");
    assert_eq!(preview["ok"], true, "{a}");
    assert_eq!(preview["rows_affected"], customer7, "{a}");
    assert_eq!(preview["table"], "public.orders", "{a}");
    // Row images by primary key: the same rows before and after, only the status changed.
    let before = preview["before"].as_array().expect("before images");
    let after = preview["after"].as_array().expect("after images");
    assert_eq!(after.len(), customer7.min(20) as usize, "{a}");
    assert_eq!(before.len(), after.len(), "{a}");
    for row in after {
        assert_eq!(row["status"], "held", "{row}");
        let old = before
            .iter()
            .find(|b| b["id"] == row["id"])
            .unwrap_or_else(|| panic!("no before image of {row}"));
        assert_ne!(old["status"], "held", "{old}");
        assert_eq!(old["total_cents"], row["total_cents"], "{old} / {row}");
    }
    assert_eq!(
        a["max_rows"], customer7,
        "the bound defaults to the preview"
    );
    assert_eq!(a["statement_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(count(&env, HELD).await, 0, "the dry run was rolled back");

    approve(&env, &id, json!({"reason": "as previewed"})).await;
    let done = ran(&env, &id).await;
    assert_eq!(done["state"], "executed", "{done}");
    assert_eq!(done["rows_affected"], preview["rows_affected"], "{done}");
    assert_eq!(count(&env, HELD).await, customer7);
}

#[tokio::test]
async fn an_effect_past_the_bound_fails_and_leaves_the_table_unchanged() {
    let env = env(PreviewMode::DryRun).await;
    let sql = "UPDATE public.orders SET status = 'held' WHERE customer_id = 9";
    let previewed_count = count(
        &env,
        "SELECT count(*) FROM public.orders WHERE customer_id = 9",
    )
    .await;

    // A row added between the preview and the execution pushes the effect past the bound.
    let id = queue(&env, sql).await;
    let a = previewed(&env, &id).await;
    assert_eq!(a["max_rows"], previewed_count, "{a}");
    common::admin(&env.shop_db)
        .await
        .batch_execute(
            "INSERT INTO public.orders (id, customer_id, total_cents, status, created_at)
             VALUES (999001, 9, 100, 'new', now())",
        )
        .await
        .expect("insert");
    approve(&env, &id, json!({"reason": "as previewed"})).await;
    let done = ran(&env, &id).await;
    assert_eq!(done["state"], "failed", "{done}");
    assert_eq!(
        done["error"],
        format!(
            "effect exceeded the approved bound ({} rows > {previewed_count})",
            previewed_count + 1
        ),
        "{done}"
    );
    assert_eq!(count(&env, HELD).await, 0, "nothing changed");
    // The requester sees why through interlock_approval_status.
    let status = call(
        &env.gateway.url(""),
        Some(&env.agent_key),
        MODERN,
        "interlock_approval_status",
        json!({"approval_id": id}),
    )
    .await;
    let status: Value = serde_json::from_str(
        status.body["result"]["content"][0]["text"]
            .as_str()
            .expect("text"),
    )
    .expect("json");
    assert_eq!(status["state"], "failed", "{status}");
    assert!(
        status["result"]["error"]
            .as_str()
            .unwrap_or("")
            .contains("exceeded the approved bound"),
        "{status}"
    );

    // An approver may set a lower bound than the preview.
    let id = queue(&env, sql).await;
    previewed(&env, &id).await;
    let approved = approve(&env, &id, json!({"reason": "at most one", "max_rows": 1})).await;
    assert_eq!(approved["max_rows"], 1, "{approved}");
    let done = ran(&env, &id).await;
    assert_eq!(done["state"], "failed", "{done}");
    assert_eq!(count(&env, HELD).await, 0, "nothing changed");
}

#[tokio::test]
async fn an_explain_preview_never_executes_the_write() {
    let env = env(PreviewMode::Explain).await;
    common::admin(&env.shop_db)
        .await
        .batch_execute(
            "CREATE TABLE public.fired (n bigint NOT NULL);
             INSERT INTO public.fired VALUES (0);
             CREATE FUNCTION public.count_fired() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN UPDATE public.fired SET n = n + 1; RETURN NEW; END $$;
             CREATE TRIGGER count_fired BEFORE UPDATE ON public.orders
               FOR EACH ROW EXECUTE FUNCTION public.count_fired();",
        )
        .await
        .expect("trigger");
    let id = queue(
        &env,
        "UPDATE public.orders SET status = 'held' WHERE customer_id = 7",
    )
    .await;
    let a = previewed(&env, &id).await;
    let preview = &a["preview"];
    assert_eq!(preview["mode"], "explain", "{a}");
    assert_eq!(preview["ok"], true, "{a}");
    assert!(preview["estimated_rows"].as_i64().is_some(), "{a}");
    assert!(preview["plan"].is_array(), "{a}");
    assert_eq!(a["max_rows"], preview["estimated_rows"], "{a}");
    // Asked again by an approver: still nothing runs.
    let res = client()
        .post(env.gateway.url(&format!("/admin/approvals/{id}/preview")))
        .bearer_auth(&env.approver_key)
        .send()
        .await
        .expect("refresh");
    assert_eq!(res.status(), 200);
    assert_eq!(count(&env, "SELECT n FROM public.fired").await, 0);
    assert_eq!(count(&env, HELD).await, 0);
}

#[tokio::test]
async fn a_preview_that_waits_for_a_lock_says_so_and_the_write_can_still_be_decided() {
    let env = env(PreviewMode::DryRun).await;
    // Another session holds the rows the write would change.
    let holder = common::admin(&env.shop_db).await;
    holder
        .batch_execute("BEGIN; SELECT id FROM public.orders WHERE customer_id = 7 FOR UPDATE")
        .await
        .expect("lock rows");
    let id = queue(
        &env,
        "UPDATE public.orders SET status = 'held' WHERE customer_id = 7",
    )
    .await;
    let a = previewed(&env, &id).await;
    let preview = &a["preview"];
    assert_eq!(preview["ok"], false, "{a}");
    assert!(
        preview["error"]
            .as_str()
            .unwrap_or("")
            .contains("waited longer than approvals.preview_lock_timeout_ms"),
        "the preview says it waited for a lock: {a}"
    );
    assert_eq!(a["max_rows"], Value::Null, "no preview, no default bound");
    holder.batch_execute("ROLLBACK").await.expect("release");
    approve(&env, &id, json!({"reason": "checked by hand"})).await;
    let done = ran(&env, &id).await;
    assert_eq!(done["state"], "executed", "{done}");
}

#[tokio::test]
async fn row_images_show_only_what_the_requester_may_read_masked() {
    let env = env(PreviewMode::DryRun).await;
    // demo-agent may also change customers here; their email is masked for analysts.
    interlock::control::policy_file::apply(
        &env.pool,
        &interlock::control::policy_file::AccessFile::parse(
            r#"
[[roles]]
source = "shop"
name = "customer_editor"
allow = ["read public.customers", "write public.customers"]

[[grants]]
identity = "demo-agent"
source = "shop"
roles = ["analyst", "customer_editor"]
"#,
        )
        .expect("access file"),
    )
    .await
    .expect("apply");
    let email: String = common::admin(&env.shop_db)
        .await
        .query_one("SELECT email FROM public.customers WHERE id = 3", &[])
        .await
        .expect("email")
        .get(0);
    let id = queue(
        &env,
        "UPDATE public.customers SET country = 'XX' WHERE id = 3",
    )
    .await;
    let a = previewed(&env, &id).await;
    let preview = &a["preview"];
    assert_eq!(preview["rows_affected"], 1, "{a}");
    for image in ["before", "after"] {
        let row = &preview[image][0];
        let shown = row["email"]
            .as_str()
            .unwrap_or_else(|| panic!("{image}: {a}"));
        assert_ne!(shown, email, "{image}: the email is masked");
        assert!(
            !a.to_string().contains(&email),
            "the clear email appears nowhere"
        );
        assert_eq!(row["id"], 3, "{image}: {row}");
    }
    assert_eq!(preview["after"][0]["country"], "XX", "{a}");
    assert_ne!(preview["before"][0]["country"], "XX", "{a}");
}

#[tokio::test]
async fn a_write_whose_shape_has_no_images_still_gets_its_count() {
    let env = env(PreviewMode::DryRun).await;
    let id = queue(
        &env,
        "UPDATE public.orders SET status = 'held' FROM public.customers c WHERE c.id = orders.customer_id AND c.id = 7",
    )
    .await;
    let a = previewed(&env, &id).await;
    let preview = &a["preview"];
    assert_eq!(preview["ok"], true, "{a}");
    let customer7 = count(
        &env,
        "SELECT count(*) FROM public.orders WHERE customer_id = 7",
    )
    .await;
    assert_eq!(preview["rows_affected"], customer7, "{a}");
    assert!(
        preview["no_images"]
            .as_str()
            .unwrap_or("")
            .contains("other tables"),
        "it says why there are no images: {a}"
    );
    assert_eq!(count(&env, HELD).await, 0);
}
