//! An approved write is held to the rows it actually changes, in every table, whatever its
//! shape (issue 25 §1–§2), on real PostgreSQL: the preview's count, the bound, the executed
//! approval's `rows_affected` and `rows_changed`, compared with an independent oracle that
//! diffs the tables themselves; and an imaged preview binds the execution to the rows it
//! showed, by key.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::approvals;
use common::env::{demo_env_with, DemoEnv};
use interlock::control::sources::PreviewMode;
use serde_json::{json, Value};

/// Tables the generated writes change: a plain table, one whose trigger logs every change
/// into another, one whose rows a foreign key deletes in cascade, and one keyed by text.
const FIXTURE: &str = "
CREATE TABLE public.b_items (id int PRIMARY KEY, n int NOT NULL, tag text NOT NULL);
INSERT INTO public.b_items SELECT g, g, 'old' FROM generate_series(1, 1000) g;
CREATE TABLE public.b_child (id int PRIMARY KEY,
                             item_id int NOT NULL REFERENCES public.b_items ON DELETE CASCADE);
INSERT INTO public.b_child SELECT g, g FROM generate_series(1, 1000) g WHERE g % 2 = 0;
CREATE TABLE public.b_log (id bigserial PRIMARY KEY, item_id int, op text);
CREATE TABLE public.b_logged (id int PRIMARY KEY, n int NOT NULL);
INSERT INTO public.b_logged SELECT g, g FROM generate_series(1, 1000) g;
CREATE FUNCTION public.b_log_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.b_log (item_id, op) VALUES (coalesce(NEW.id, OLD.id), TG_OP);
  RETURN coalesce(NEW, OLD);
END $$;
CREATE TRIGGER b_log_change AFTER INSERT OR UPDATE OR DELETE ON public.b_logged
  FOR EACH ROW EXECUTE FUNCTION public.b_log_change();
CREATE TABLE public.b_tags (k text PRIMARY KEY, n int NOT NULL);
INSERT INTO public.b_tags VALUES ('a,b', 1), ('[\"x\"]', 2), ('é', 3), ('Z', 4), ('a', 5),
  ('a b', 6), ('zz', 7), ('\\\\', 8);
CREATE TABLE public.b_skew (id int PRIMARY KEY, kind int NOT NULL) WITH (autovacuum_enabled = false);
INSERT INTO public.b_skew SELECT g, 1 FROM generate_series(1, 20000) g;
ANALYZE public.b_skew;
-- The statistics still say every row is kind 1: the planner's estimates are wrong both ways.
UPDATE public.b_skew SET kind = 2 WHERE id > 3;
";

const TABLES: [&str; 5] = ["b_items", "b_child", "b_log", "b_logged", "b_tags"];

const ACCESS: &str = r#"
[[roles]]
source = "shop"
name = "bounds_writer"
allow = ["read public.b_items", "write public.b_items", "read public.b_child", "write public.b_child",
         "read public.b_log", "write public.b_log", "read public.b_logged", "write public.b_logged",
         "read public.b_tags", "write public.b_tags", "read public.b_skew", "write public.b_skew"]

[[grants]]
identity = "demo-agent"
source = "shop"
roles = ["analyst", "bounds_writer"]
"#;

async fn env(preview: PreviewMode) -> DemoEnv {
    // The generator queues more writes a second than the default write budget allows.
    let env = demo_env_with(
        |s| s.rate_limit.write_per_second = 1000.0,
        |src| src.approval_preview = Some(preview),
    )
    .await;
    common::admin(&env.shop_db)
        .await
        .batch_execute(FIXTURE)
        .await
        .expect("fixture");
    interlock::control::policy_file::apply(
        &env.pool,
        &interlock::control::policy_file::AccessFile::parse(ACCESS).expect("access file"),
    )
    .await
    .expect("apply");
    let res = common::http::client()
        .post(env.gateway.url("/admin/sources/shop/catalog/refresh"))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .expect("refresh");
    assert_eq!(res.status(), 200, "the catalog names the fixture's tables");
    env
}

/// The audit record of approval `id`'s outcome (appended right after it is stored).
async fn outcome_record(env: &DemoEnv, id: &str) -> Value {
    let id = uuid::Uuid::parse_str(id).expect("uuid");
    let db = common::admin(&env.control_db).await;
    for _ in 0..100 {
        let row = db
            .query_opt(
                "SELECT decision FROM audit_records WHERE approval_id = $1 AND tool = 'approval.outcome'",
                &[&id],
            )
            .await
            .expect("audit");
        if let Some(row) = row {
            return row.get(0);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no outcome record for {id}");
}

/// Every row of every fixture table (and of `public.orders`), by key, as text.
async fn snapshot(
    db: &impl tokio_postgres::GenericClient,
) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut all = BTreeMap::new();
    for table in TABLES.iter().copied().chain(["orders"]) {
        let rows = db
            .query(
                &format!(
                    "SELECT t.{}::text, t::text FROM public.{table} t",
                    key_of(table)
                ),
                &[],
            )
            .await
            .expect("snapshot");
        let rows = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
        all.insert(format!("public.{table}"), rows);
    }
    all
}

fn key_of(table: &str) -> &'static str {
    if table == "b_tags" {
        "k"
    } else {
        "id"
    }
}

/// Rows inserted, deleted or changed per table between two snapshots (tables with none
/// left out): the oracle, independent of PostgreSQL's statistics.
fn diff(
    before: &BTreeMap<String, BTreeMap<String, String>>,
    after: &BTreeMap<String, BTreeMap<String, String>>,
) -> BTreeMap<String, u64> {
    let mut changed = BTreeMap::new();
    for (table, old) in before {
        let new = &after[table];
        let n = old.iter().filter(|(k, v)| new.get(*k) != Some(v)).count()
            + new.keys().filter(|k| !old.contains_key(*k)).count();
        if n > 0 {
            changed.insert(table.clone(), n as u64);
        }
    }
    changed
}

/// What `sql` changes when run now: run as the superuser in a transaction that is rolled
/// back, the tables diffed.
async fn oracle(env: &DemoEnv, sql: &str) -> BTreeMap<String, u64> {
    let mut db = common::admin(&env.shop_db).await;
    let tx = db.transaction().await.expect("begin");
    let before = snapshot(&tx).await;
    tx.batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let after = snapshot(&tx).await;
    tx.rollback().await.expect("rollback");
    diff(&before, &after)
}

fn as_json(counts: &BTreeMap<String, u64>) -> Value {
    json!(counts)
}

/// The write kinds, each over its own rows (`i` picks them), with what it is.
fn writes(i: usize) -> Vec<(&'static str, String)> {
    // Each kind's cases run in a block of their own, on rows no earlier block changed.
    let (lo, hi) = (i * 15 + 1, i * 15 + 3 + i % 5);
    let fresh = 100_000 + i * 100;
    vec![
        ("update", format!("UPDATE public.b_items SET n = n + 1 WHERE id BETWEEN {lo} AND {hi}")),
        ("delete cascading", format!("DELETE FROM public.b_items WHERE id BETWEEN {lo} AND {hi}")),
        (
            "insert select",
            format!(
                "INSERT INTO public.b_items (id, n, tag) SELECT id + {fresh}, n, 'copy' FROM public.b_items WHERE id BETWEEN {} AND {}",
                lo + 5, hi + 5
            ),
        ),
        (
            "upsert",
            format!(
                "INSERT INTO public.b_items (id, n, tag) SELECT id, 0, 'new' FROM public.b_logged WHERE id BETWEEN {} AND {} ON CONFLICT (id) DO UPDATE SET n = public.b_items.n + 1000",
                lo + 10, hi + 10 + 3
            ),
        ),
        (
            "delete using",
            format!(
                "DELETE FROM public.b_child USING public.b_items i WHERE i.id = b_child.item_id AND i.id BETWEEN {} AND {}",
                lo + 13, hi + 13
            ),
        ),
        ("update firing a trigger", format!("UPDATE public.b_logged SET n = n + 1 WHERE id BETWEEN {lo} AND {hi}")),
        (
            "delete firing a trigger",
            format!("DELETE FROM public.b_logged WHERE id BETWEEN {} AND {}", lo / 2 + 500, hi / 2 + 500),
        ),
        ("update by text key", "UPDATE public.b_tags SET n = n + 1 WHERE k <> 'zz'".to_string()),
    ]
}

/// The shapes a write can take that the classifier accepts.
fn shapes(write: &str) -> Vec<(&'static str, String)> {
    vec![
        ("plain", write.to_string()),
        ("returning", format!("{write} RETURNING 1 AS one")),
        ("cte, select 1", format!("WITH u AS ({write} RETURNING 1) SELECT 1 AS done")),
        ("cte, count", format!("WITH u AS ({write} RETURNING 1) SELECT count(*) FROM u")),
        (
            "two ctes",
            format!(
                "WITH u AS ({write} RETURNING 1), v AS (UPDATE public.b_items SET n = n + 1 WHERE id = 999 RETURNING 1) SELECT (SELECT count(*) FROM u) + (SELECT count(*) FROM v) AS both_"
            ),
        ),
        ("explain analyse", format!("EXPLAIN (ANALYSE) {write}")),
        ("explain analyze verbose", format!("EXPLAIN ANALYZE VERBOSE {write}")),
    ]
}

/// Queues `sql` as the demo agent; the approval once previewed, or the refusal.
async fn queued(env: &DemoEnv, sql: &str) -> Result<Value, Value> {
    let a = env.agent_query(json!({"sql": sql})).await;
    let Some(id) = a.body["result"]["structuredContent"]["approval_id"].as_str() else {
        return Err(a.body);
    };
    let gw = &env.gateway;
    Ok(approvals::wait(gw, &env.operator_key, id, approvals::previewed).await)
}

async fn decide_and_run(env: &DemoEnv, a: &Value, body: Value) -> Value {
    let id = a["id"].as_str().expect("id");
    approvals::approve(&env.gateway, &env.approver_key, id, body).await;
    approvals::wait(&env.gateway, &env.operator_key, id, approvals::ran).await
}

#[tokio::test]
async fn every_write_shape_is_counted_and_bounded_by_the_rows_it_changes_in_every_table() {
    let env = env(PreviewMode::DryRun).await;
    let (mut accepted, mut refused) = (0, Vec::new());
    let (kinds, forms) = (writes(0).len(), shapes("").len());
    for k in 0..kinds {
        for f in 0..forms {
            let case = 1 + k * forms + f;
            let (kind, write) = writes(case).swap_remove(k);
            let (shape, sql) = shapes(&write).swap_remove(f);
            let what = format!("{kind} / {shape}: {sql}");
            let expected = oracle(&env, &sql).await;
            let total: u64 = expected.values().sum();
            assert!(
                total > 0,
                "the generator makes writes that change rows: {what}"
            );

            // One copy is approved one row short of its effect: it fails, nothing changes.
            let short = match queued(&env, &sql).await {
                Ok(a) => a,
                Err(refusal) => {
                    refused.push(format!("{what} → {refusal}"));
                    continue;
                }
            };
            accepted += 1;
            let preview = &short["preview"];
            assert_eq!(preview["ok"], true, "{what}: {short}");
            assert_eq!(preview["rows_affected"], total, "{what}: {short}");
            assert_eq!(
                preview["rows_changed"],
                as_json(&expected),
                "{what}: {short}"
            );
            assert_eq!(
                short["max_rows"], total,
                "the bound defaults to the effect: {what}"
            );
            let db = common::admin(&env.shop_db).await;
            let before = snapshot(&db).await;
            let failed = decide_and_run(
                &env,
                &short,
                json!({"reason": "one row short", "max_rows": total - 1}),
            )
            .await;
            assert_eq!(failed["state"], "failed", "{what}: {failed}");
            let error = failed["error"].as_str().unwrap_or("");
            assert!(
                error.contains(&format!("({total} rows > {})", total - 1)),
                "{what}: {failed}"
            );
            assert_eq!(
                diff(&before, &snapshot(&db).await),
                BTreeMap::new(),
                "{what}: nothing changed"
            );

            // Another copy, approved as previewed: it changes exactly what the oracle said.
            let full = queued(&env, &sql).await.expect("queued again");
            let done = decide_and_run(&env, &full, json!({"reason": "as previewed"})).await;
            assert_eq!(done["state"], "executed", "{what}: {done}");
            assert_eq!(done["rows_affected"], total, "{what}: {done}");
            assert_eq!(done["rows_changed"], as_json(&expected), "{what}: {done}");
            assert_eq!(
                diff(&before, &snapshot(&db).await),
                expected,
                "{what}: the tables"
            );
        }
    }
    // Every shape of every kind is a write the classifier accepts (none is silently read).
    assert!(refused.is_empty(), "refused shapes: {refused:#?}");
    assert_eq!(accepted, kinds * forms);
}

/// MERGE (PostgreSQL 15 has no RETURNING for it and no MERGE in a WITH): plain and under
/// `EXPLAIN (ANALYSE)`, matched rows updated and unmatched ones inserted.
#[tokio::test]
async fn merge_is_counted_and_bounded_by_the_rows_it_changes() {
    let env = env(PreviewMode::DryRun).await;
    let db = common::admin(&env.shop_db).await;
    db.batch_execute("DELETE FROM public.b_items WHERE id BETWEEN 995 AND 1000")
        .await
        .expect("unmatched rows");
    for (i, wrap) in ["", "EXPLAIN (ANALYSE) "].into_iter().enumerate() {
        let (lo, hi) = (980 + i * 10, 989 + i * 10);
        let sql = format!(
            "{wrap}MERGE INTO public.b_items t USING (SELECT id FROM public.b_logged WHERE id BETWEEN {lo} AND {hi}) s ON t.id = s.id \
             WHEN MATCHED THEN UPDATE SET n = t.n + 1 WHEN NOT MATCHED THEN INSERT (id, n, tag) VALUES (s.id, 0, 'merged')"
        );
        let expected = oracle(&env, &sql).await;
        let total: u64 = expected.values().sum();
        assert_eq!(total, 10, "{sql}");
        let a = queued(&env, &sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(a["preview"]["rows_affected"], total, "{sql}: {a}");
        let before = snapshot(&db).await;
        let failed = decide_and_run(&env, &a, json!({"reason": "short", "max_rows": 9})).await;
        assert_eq!(failed["state"], "failed", "{sql}: {failed}");
        assert_eq!(diff(&before, &snapshot(&db).await), BTreeMap::new());
        let a = queued(&env, &sql).await.expect("queued");
        let done = decide_and_run(&env, &a, json!({"reason": "as previewed"})).await;
        assert_eq!(done["rows_affected"], total, "{sql}: {done}");
        assert_eq!(diff(&before, &snapshot(&db).await), expected, "{sql}");
    }
}

/// The review's two examples, over MCP, on the demo orders (10,000 rows).
#[tokio::test]
async fn the_reviews_examples_are_bounded_by_the_rows_they_change() {
    let env = env(PreviewMode::DryRun).await;
    let cases = [
        (
            "WITH u AS (UPDATE public.orders SET status = 'x' WHERE id = 42 OR total_cents >= 0 RETURNING 1) SELECT 1 AS done",
            10_000,
        ),
        (
            "EXPLAIN (ANALYSE) UPDATE public.orders SET status = 'y' WHERE id > 9000",
            1_000,
        ),
    ];
    for (sql, rows) in cases {
        assert_eq!(oracle(&env, sql).await.values().sum::<u64>(), rows, "{sql}");
        // Approved with the bound the old count suggested: it fails and changes nothing.
        let a = queued(&env, sql).await.expect("queued");
        assert_eq!(a["preview"]["rows_affected"], rows, "{sql}: {a}");
        assert_eq!(a["max_rows"], rows, "{sql}: {a}");
        let db = common::admin(&env.shop_db).await;
        let before = snapshot(&db).await;
        let old_bound = if sql.starts_with("WITH") { 1 } else { 0 };
        let failed =
            decide_and_run(&env, &a, json!({"reason": "bound", "max_rows": old_bound})).await;
        assert_eq!(failed["state"], "failed", "{sql}: {failed}");
        assert_eq!(diff(&before, &snapshot(&db).await), BTreeMap::new());
        // Approved as previewed: recorded with the rows it changed.
        let a = queued(&env, sql).await.expect("queued");
        let done = decide_and_run(&env, &a, json!({"reason": "as previewed"})).await;
        assert_eq!(done["state"], "executed", "{sql}: {done}");
        assert_eq!(done["rows_affected"], rows, "{sql}: {done}");
        assert_eq!(
            done["rows_changed"],
            json!({"public.orders": rows}),
            "{sql}: {done}"
        );
        // The audit record of the outcome carries the same count.
        let record = outcome_record(&env, a["id"].as_str().expect("id")).await;
        assert_eq!(record["rows_affected"], rows, "{record}");
        assert_eq!(
            record["rows_changed"],
            json!({"public.orders": rows}),
            "{record}"
        );
    }
}

/// An explain preview estimates every data-modifying part of the statement, the write
/// inside `EXPLAIN (ANALYSE)`, and names the triggers and foreign-key actions it cannot see.
#[tokio::test]
async fn an_explain_preview_estimates_every_write_in_the_statement_and_names_what_it_cannot_see() {
    let env = env(PreviewMode::Explain).await;
    let cases = [
        ("WITH u AS (UPDATE public.orders SET status = 'x' WHERE id = 42 OR total_cents >= 0 RETURNING 1) SELECT 1 AS done", 1_000..100_000, None),
        ("EXPLAIN (ANALYSE) UPDATE public.orders SET status = 'y' WHERE id > 9000", 300..5_000, None),
        ("UPDATE public.b_logged SET n = n + 1 WHERE id BETWEEN 1 AND 10", 1..40, Some("trigger b_log_change on b_logged (for each row)")),
        ("DELETE FROM public.b_items WHERE id BETWEEN 1 AND 10", 1..40, Some("foreign key b_child_item_id_fkey on b_child (ON DELETE CASCADE)")),
    ];
    for (sql, range, also) in cases {
        let a = queued(&env, sql).await.expect("queued");
        let p = &a["preview"];
        assert_eq!(p["mode"], "explain", "{sql}: {a}");
        let estimate = p["estimated_rows"].as_i64().unwrap_or(-1);
        assert!(
            range.contains(&estimate),
            "{sql}: estimate {estimate} not in {range:?}: {a}"
        );
        assert_eq!(a["max_rows"], estimate, "{sql}");
        let named: Vec<&str> = p["may_also_change"]
            .as_array()
            .expect("may_also_change")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(named, also.into_iter().collect::<Vec<_>>(), "{sql}: {a}");
        assert_eq!(p["bound_to_rows_shown"], false, "{sql}: {a}");
    }
    // Nothing ran.
    let db = common::admin(&env.shop_db).await;
    let held: i64 = db
        .query_one(
            "SELECT count(*) FROM public.orders WHERE status IN ('x', 'y')",
            &[],
        )
        .await
        .expect("count")
        .get(0);
    assert_eq!(held, 0);
}

/// §2: where the preview showed the rows by key, the execution changes exactly those rows
/// or fails with nothing changed; a statement that reads the clock is marked as such.
#[tokio::test]
async fn an_imaged_write_changes_exactly_the_rows_it_showed_or_nothing() {
    let env = env(PreviewMode::DryRun).await;
    let db = common::admin(&env.shop_db).await;
    // The review's example: the row it picks moves with the clock.
    let sql = "UPDATE public.orders SET status = 'cancelled' WHERE id = mod(extract(epoch FROM now())::bigint, 10000) + 1";
    let a = queued(&env, sql).await.expect("queued");
    assert_eq!(a["touches"]["depends_on_clock"], true, "{a}");
    assert_eq!(a["preview"]["bound_to_rows_shown"], true, "{a}");
    let shown = a["preview"]["after"][0]["id"]
        .as_i64()
        .expect("the row shown");
    // A second later the statement picks another row.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let before = snapshot(&db).await;
    let failed = decide_and_run(&env, &a, json!({"reason": "the row I saw"})).await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert!(
        failed["error"]
            .as_str()
            .unwrap_or("")
            .contains("would change different rows than the preview showed"),
        "{failed}"
    );
    assert_eq!(
        diff(&before, &snapshot(&db).await),
        BTreeMap::new(),
        "nothing changed (order {shown})"
    );

    // A write whose rows do not move runs, its own RETURNING intact and without the key.
    let sql =
        "UPDATE public.b_tags SET n = n + 1 WHERE k IN ('a,b', '[\"x\"]', 'é', 'Z') RETURNING k, n";
    let a = queued(&env, sql).await.expect("queued");
    assert_eq!(a["touches"]["depends_on_clock"], false, "{a}");
    assert_eq!(a["preview"]["bound_to_rows_shown"], true, "{a}");
    let done = decide_and_run(&env, &a, json!({"reason": "as shown"})).await;
    assert_eq!(done["state"], "executed", "{done}");
    let returned = done["result"].as_array().expect("returning rows");
    assert_eq!(returned.len(), 4, "{done}");
    for row in returned {
        let keys: Vec<&String> = row.as_object().expect("row").keys().collect();
        assert_eq!(keys, ["k", "n"], "{done}");
    }

    // Rows added after the preview that the write would now also change: refused by key
    // (the count alone would pass, as one previewed row is gone).
    let sql = "UPDATE public.b_items SET n = n + 1 WHERE tag = 'moving'";
    db.batch_execute("UPDATE public.b_items SET tag = 'moving' WHERE id IN (901, 902)")
        .await
        .expect("setup");
    let a = queued(&env, sql).await.expect("queued");
    assert_eq!(a["preview"]["rows_affected"], 2, "{a}");
    db.batch_execute(
        "UPDATE public.b_items SET tag = 'old' WHERE id = 902;
         UPDATE public.b_items SET tag = 'moving' WHERE id = 903;",
    )
    .await
    .expect("move a row");
    let before = snapshot(&db).await;
    let failed = decide_and_run(&env, &a, json!({"reason": "the rows I saw"})).await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert_eq!(diff(&before, &snapshot(&db).await), BTreeMap::new());
}

/// The rows of `public.b_skew` of `kind`.
async fn skew_count(env: &DemoEnv, kind: i32) -> i64 {
    common::admin(&env.shop_db)
        .await
        .query_one(
            "SELECT count(*) FROM public.b_skew WHERE kind = $1",
            &[&kind],
        )
        .await
        .expect("count")
        .get(0)
}

/// With an `explain` preview the bound is the planner's estimate, a statistic: on a column
/// whose statistics are wrong, an approved run that changes more rows than estimated is
/// rolled back and handed back to its approvers with the exact count (not failed), and a
/// run that changes fewer runs; a bound an approver set, or the measured count, still fails
/// the write when exceeded.
#[tokio::test]
async fn an_estimated_bound_is_handed_back_with_the_exact_count() {
    let env = env(PreviewMode::Explain).await;
    let gw = &env.gateway;

    // Underestimated: the planner expects about one row of kind 2; there are 19 997.
    let under = queued(&env, "UPDATE public.b_skew SET kind = 3 WHERE kind = 2")
        .await
        .expect("queued");
    let estimated = under["max_rows"].as_i64().expect("a bound");
    assert!(estimated < 100, "the estimate is far off: {under}");
    assert_eq!(under["bound_source"], "estimate", "{under}");
    let id = under["id"].as_str().expect("id").to_string();
    approvals::approve(gw, &env.approver_key, &id, json!({"reason": "looks small"})).await;
    let back = approvals::wait(gw, &env.operator_key, &id, |a| {
        a["handbacks"].as_array().is_some_and(|h| !h.is_empty())
    })
    .await;
    assert_eq!(back["state"], "pending", "handed back, not failed: {back}");
    assert_eq!(back["max_rows"], 19_997, "bound to the exact count: {back}");
    assert_eq!(back["bound_source"], "measured", "{back}");
    assert_eq!(back["handbacks"][0]["measured"], 19_997, "{back}");
    assert_eq!(back["handbacks"][0]["estimated"], estimated, "{back}");
    assert_eq!(
        back["approvals"], 0,
        "the earlier approval no longer counts: {back}"
    );
    assert_eq!(
        back["handbacks"][0]["decisions"][0]["reason"], "looks small",
        "{back}"
    );
    assert_eq!(
        skew_count(&env, 2).await,
        19_997,
        "rolled back: nothing changed"
    );
    let db = common::admin(&env.control_db).await;
    let uuid = uuid::Uuid::parse_str(&id).expect("uuid");
    let returned: i64 = db
        .query_one(
            "SELECT count(*) FROM audit_records WHERE approval_id = $1 AND tool = 'approval.return'",
            &[&uuid],
        )
        .await
        .expect("audit")
        .get(0);
    assert_eq!(returned, 1, "the hand-back is audited");
    // Approved again, knowing the count: it runs.
    let done = decide_and_run(&env, &back, json!({"reason": "yes, all of them"})).await;
    assert_eq!(done["state"], "executed", "{done}");
    assert_eq!(done["rows_affected"], 19_997, "{done}");
    assert_eq!(skew_count(&env, 3).await, 19_997);

    // Overestimated: the planner expects 20 000 rows of kind 1; there are 3. It runs.
    let over = queued(&env, "UPDATE public.b_skew SET kind = 4 WHERE kind = 1")
        .await
        .expect("queued");
    assert!(
        over["max_rows"].as_i64().expect("a bound") > 10_000,
        "{over}"
    );
    let done = decide_and_run(&env, &over, json!({"reason": "fine"})).await;
    assert_eq!(done["state"], "executed", "{done}");
    assert_eq!(done["rows_affected"], 3, "{done}");
    assert!(
        done["handbacks"].as_array().is_some_and(Vec::is_empty),
        "{done}"
    );

    // A bound an approver set fails the write when exceeded, estimate or not.
    let set = queued(&env, "UPDATE public.b_skew SET kind = 5 WHERE kind = 3")
        .await
        .expect("queued");
    let failed = decide_and_run(&env, &set, json!({"reason": "ten at most", "max_rows": 10})).await;
    assert_eq!(failed["state"], "failed", "{failed}");
    assert!(
        failed["error"].as_str().unwrap_or("").contains("> 10)"),
        "{failed}"
    );

    // A measured bound too: handed back once, then the table grows before the new approval.
    let again = queued(&env, "UPDATE public.b_skew SET kind = 6 WHERE kind = 4")
        .await
        .expect("queued");
    let id = again["id"].as_str().expect("id").to_string();
    assert!(again["max_rows"].as_i64().expect("bound") < 10, "{again}");
    common::admin(&env.shop_db)
        .await
        .batch_execute("UPDATE public.b_skew SET kind = 4 WHERE kind = 3 AND id < 1000")
        .await
        .expect("more rows of kind 4");
    approvals::approve(gw, &env.approver_key, &id, json!({"reason": "small"})).await;
    let back = approvals::wait(gw, &env.operator_key, &id, |a| {
        a["handbacks"].as_array().is_some_and(|h| !h.is_empty())
    })
    .await;
    let measured = back["max_rows"].as_i64().expect("measured");
    common::admin(&env.shop_db)
        .await
        .batch_execute("UPDATE public.b_skew SET kind = 4 WHERE kind = 3 AND id < 2000")
        .await
        .expect("still more");
    let failed = decide_and_run(&env, &back, json!({"reason": "the count I saw"})).await;
    assert_eq!(
        failed["state"], "failed",
        "a measured bound is not handed back again: {failed}"
    );
    assert!(
        failed["error"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("> {measured})")),
        "{failed}"
    );
}
