//! Masks at the scan (issue 47): whatever a statement does with a masked column, in any
//! spelling PostgreSQL accepts, its answer depends only on the masked value.
//!
//! The property is non-interference. For two customers `a` and `b` whose emails mask to the
//! same value (same length) but whose raw emails differ (they start with other letters and
//! sort on either side of a probe customer `p`), every statement of the generator below —
//! a masked column used in every clause, in the spellings PostgreSQL's grammar folds
//! (parenthesized and signed ordinals, output names in parentheses, casts, NULLS
//! FIRST/LAST, `USING`, DISTINCT ON, GROUP BY, ROLLUP, windows, probe rows, CTEs, LATERAL, set
//! operations) — must answer the same for `a` as for `b`. Each statement is also run
//! unmasked to show it *is* an oracle on the raw value: without the masks the answers
//! differ, so the test fails if the masks stop holding.
//!
//! Checked twice: against PostgreSQL directly (the text the decision makes, with every
//! strategy that hides the value, resolver refusals set aside, so the scan wall is tried on
//! its own), and through the gateway over MCP and `/v1` as the demo agent (each answer is a
//! refusal, or the same for `a` as for `b`, and never shows a raw email).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::env::demo_env;
use common::{admin, fresh_database};
use interlock::governance::scan_mask::scan_masked;
use interlock::governance::{AccessProfile, MaskStrategy, RedactionRule};
use interlock::sql::catalog::Catalog;
use interlock::sql::classify::StatementClass;
use serde_json::{json, Value};

/// The demo's mask on `public.customers.email`.
const DEMO_KEEP: usize = 12;

/// Two customers whose emails mask alike and a probe between them.
#[derive(Debug, Clone)]
struct Pair {
    a: i64,
    b: i64,
    p: i64,
    /// `a`'s first letter (not `b`'s).
    letter: String,
}

async fn pair(client: &tokio_postgres::Client) -> Pair {
    let row = client
        .query_one(
            "WITH c AS (SELECT id, email, char_length(email) AS n FROM public.customers)
             SELECT a.id, b.id, p.id, left(a.email, 1)
               FROM c a
               JOIN c b ON b.n = a.n AND a.email < b.email AND left(a.email, 1) <> left(b.email, 1)
               JOIN c p ON p.n <> a.n AND a.email < p.email AND p.email < b.email
                       AND left(p.email, 1) <> left(a.email, 1)
              WHERE a.id > 100 AND b.id > 100 AND p.id > 100
              ORDER BY a.id, b.id, p.id LIMIT 1",
            &[],
        )
        .await
        .expect("a pair of customers");
    Pair {
        a: row.get(0),
        b: row.get(1),
        p: row.get(2),
        letter: row.get(3),
    }
}

/// Statements that use `customers.email` in every clause; `{x}` is the customer asked
/// about, `{p}` the probe, `{l}` `a`'s first letter. Every ORDER BY ends with a key that
/// breaks ties the same way for `a` and `b`, so only the masked column can order them.
fn statements() -> Vec<String> {
    let probe = "(SELECT email FROM public.customers WHERE id = {p})";
    let two = "FROM public.customers c WHERE c.id IN ({x}, {p})";
    let tie = "c.id = {p}";
    let mut all = Vec::new();
    for key in [
        "c.email",
        "(c.email)",
        "((c.email))",
        "c.email DESC",
        "c.email NULLS FIRST",
        "(c.email) DESC NULLS LAST",
        "(c.email)::text",
        "c.email < {probe}",
    ] {
        all.push(format!("SELECT c.id {two} ORDER BY {key}, {tie}"));
    }
    for ordinal in [
        "1",
        "(1)",
        "((1))",
        "-(-1)",
        "(-(-(1)))",
        "1 DESC",
        "(1) USING <",
    ] {
        all.push(format!(
            "SELECT c.email, c.id {two} ORDER BY {ordinal}, {tie}"
        ));
    }
    all.extend([
        format!("SELECT c.id, c.email AS country {two} ORDER BY (country), {tie}"),
        format!("SELECT c.id, c.email AS e {two} ORDER BY ((e)), {tie}"),
        format!("SELECT DISTINCT ON ((1)) c.email, c.id {two} ORDER BY (1), {tie}"),
        format!("SELECT DISTINCT ON (-(-1)) c.email, c.id {two} ORDER BY 1, {tie}"),
        format!("SELECT c.email, count(*) {two} GROUP BY (1) ORDER BY (1)"),
        format!("SELECT count(*) {two} GROUP BY ROLLUP ((c.email < {probe})) ORDER BY 1"),
        format!("SELECT count(*) {two} GROUP BY GROUPING SETS ((c.email < {probe}), ()) ORDER BY 1"),
        format!("SELECT c.id, rank() OVER (ORDER BY c.email) AS r {two} ORDER BY r, {tie}"),
        format!(
            "SELECT c.id, row_number() OVER (PARTITION BY c.id > 0 ORDER BY (c.email), {tie}) AS r {two} ORDER BY r"
        ),
        format!("SELECT c.id, lag(c.id, 1, 0::bigint) OVER (ORDER BY c.email, {tie}) > 0 AS f {two} ORDER BY {tie}"),
        "SELECT count(*) FROM public.customers c WHERE c.id = {x} AND c.email < {probe}".into(),
        "SELECT count(*) FROM public.customers c WHERE c.id = {x} AND c.email LIKE '{l}%'".into(),
        "SELECT count(*) FROM public.customers c WHERE c.id = {x} AND substr(c.email, 1, 1) = '{l}'"
            .into(),
        "SELECT count(*) FROM public.customers c WHERE c.id = {x} AND (c.email, 1) < ({probe}, 2)"
            .into(),
        "SELECT count(*) FROM public.customers c WHERE c.id = {x} AND c.email BETWEEN '{l}' AND {probe}"
            .into(),
        "SELECT x FROM (SELECT c.email AS x FROM public.customers c WHERE c.id = {x} UNION ALL SELECT {probe}) t ORDER BY (1) LIMIT 1"
            .into(),
        "SELECT count(*) FROM (SELECT c.email FROM public.customers c WHERE c.id = {x} INTERSECT SELECT email FROM public.customers WHERE email LIKE '{l}%') t"
            .into(),
        "SELECT (SELECT count(*) FROM public.customers d WHERE d.email < c.email) FROM public.customers c WHERE c.id = {x}"
            .into(),
        "SELECT count(*) FROM public.customers c JOIN public.customers d ON d.id = {p} AND c.email < d.email WHERE c.id = {x}"
            .into(),
        "WITH t AS (SELECT email FROM public.customers WHERE id = {x}) SELECT count(*) FROM t WHERE email < {probe}"
            .into(),
        "SELECT count(*) FROM public.customers c WHERE c.id = {x} HAVING min(c.email) < {probe}".into(),
        "SELECT max(c.email) = {probe} FROM public.customers c WHERE c.id IN ({x}, {p})".into(),
        "SELECT CASE WHEN c.email < {probe} THEN 1 ELSE 0 END FROM public.customers c WHERE c.id = {x}"
            .into(),
        "SELECT count(*) FROM (SELECT email FROM public.customers WHERE id = {x}) s WHERE s.email LIKE '{l}%'"
            .into(),
        "SELECT EXISTS (SELECT 1 FROM public.customers WHERE id = {x} AND email LIKE '{l}%')".into(),
        "SELECT l.n FROM public.customers c, LATERAL (SELECT c.email < {probe} AS n) l WHERE c.id = {x}"
            .into(),
        "WITH RECURSIVE a AS (SELECT id, status FROM orders), orders AS (SELECT id, email AS status FROM public.customers) SELECT count(*) FROM a WHERE status LIKE '{l}%' AND id = {x}"
            .into(),
        "SELECT count(*) FROM customers WHERE id = {x} AND customers.email LIKE '{l}%'".into(),
        "SELECT count(*) FROM ONLY public.customers c WHERE c.id = {x} AND c.email LIKE '{l}%'"
            .into(),
        "SELECT count(*) FROM public.customers AS c(i, n, e) WHERE c.i = {x} AND c.e LIKE '{l}%'"
            .into(),
        "SELECT count(DISTINCT c.id) FROM (public.customers c LEFT JOIN public.orders o ON o.customer_id = c.id) WHERE c.id = {x} AND c.email LIKE '{l}%'"
            .into(),
    ]);
    all.into_iter()
        .map(|s| s.replace("{probe}", probe))
        .collect()
}

fn instantiate(template: &str, pair: &Pair, x: i64) -> String {
    template
        .replace("{x}", &x.to_string())
        .replace("{p}", &pair.p.to_string())
        .replace("{l}", &pair.letter)
}

/// A result as text cells, with the asked-about customer's id written `X` and every email
/// masked as the demo masks it (so the raw run is compared on what it *orders and counts*,
/// not on the emails it shows).
fn normalized(rows: Vec<Vec<Option<String>>>, x: i64, mask: &MaskStrategy) -> Vec<Vec<String>> {
    rows.into_iter()
        .map(|row| {
            row.into_iter()
                .map(|cell| match cell {
                    None => "NULL".to_string(),
                    Some(s) if s == x.to_string() => "X".to_string(),
                    Some(s) if s.ends_with("@example.com") => {
                        interlock::governance::apply(mask, &json!(s), b"k")
                            .as_str()
                            .unwrap_or("NULL")
                            .to_string()
                    }
                    Some(s) => s,
                })
                .collect()
        })
        .collect()
}

async fn run_text(
    client: &tokio_postgres::Client,
    sql: &str,
) -> Result<Vec<Vec<Option<String>>>, String> {
    let messages = client.simple_query(sql).await.map_err(|e| e.to_string())?;
    Ok(messages
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect())
}

fn profile_masking(strategy: MaskStrategy) -> AccessProfile {
    AccessProfile {
        roles: Vec::new(),
        policies: Vec::new(),
        redactions: vec![RedactionRule {
            schema: "public".into(),
            table: "customers".into(),
            column: "email".into(),
            strategy,
            allow_filter: false,
        }],
    }
}

/// The text the decision runs for `sql`, or why the resolver could not read it.
fn masked_text(sql: &str, catalog: &Catalog, profile: &AccessProfile) -> Result<String, String> {
    let limits = interlock::sql::parse::ParseLimits {
        max_bytes: interlock::sql::input::DEFAULT_MAX_SQL_BYTES,
        ..Default::default()
    };
    let parsed = interlock::sql::parse(sql, 0, &limits).map_err(|e| e.to_string())?;
    let classification = interlock::sql::classify(&parsed.statement);
    if classification.class != StatementClass::Read {
        return Err(format!("not a read: {:?}", classification.class));
    }
    let analysis =
        interlock::sql::resolve(classification.target, catalog).map_err(|e| e.to_string())?;
    let masked = scan_masked(&parsed.sql, &analysis, catalog, profile, 0, None)
        .map_err(|r| r.reason)?
        .ok_or("no mask placed")?;
    Ok(masked.text)
}

async fn shop() -> (String, tokio_postgres::Client, Catalog) {
    let db = fresh_database("scanmask").await;
    let client = admin(&db).await;
    client
        .batch_execute(interlock::demo::SHOP_SQL)
        .await
        .expect("demo data");
    client
        .batch_execute("SET search_path TO public")
        .await
        .expect("search path");
    let catalog = common::catalog_of(&client, "public").await;
    (db, client, catalog)
}

/// The scan wall on its own: every generated statement, masked at the scan with each
/// strategy that hides the value, answers alike for `a` and `b`; unmasked, each tells them
/// apart.
#[tokio::test]
async fn masked_at_the_scan_no_statement_tells_two_masked_values_apart() {
    let (_db, client, catalog) = shop().await;
    let pair = pair(&client).await;
    let demo = MaskStrategy::Partial {
        keep_last: DEMO_KEEP,
    };
    let mut failures = Vec::new();
    let mut placed = 0;
    for template in statements() {
        let (sa, sb) = (
            instantiate(&template, &pair, pair.a),
            instantiate(&template, &pair, pair.b),
        );
        // Unmasked, the statement is an oracle on the raw value.
        let raw_a = run_text(&client, &sa).await;
        let raw_b = run_text(&client, &sb).await;
        match (raw_a, raw_b) {
            (Ok(ra), Ok(rb)) => {
                if normalized(ra, pair.a, &demo) == normalized(rb, pair.b, &demo) {
                    failures.push(format!("not an oracle on the raw value: {sa}"));
                }
            }
            (ra, rb) => failures.push(format!("does not run unmasked: {sa}: {ra:?} {rb:?}")),
        }
        for strategy in [demo.clone(), MaskStrategy::Redact, MaskStrategy::Null] {
            let profile = profile_masking(strategy.clone());
            let (ma, mb) = match (
                masked_text(&sa, &catalog, &profile),
                masked_text(&sb, &catalog, &profile),
            ) {
                (Ok(ma), Ok(mb)) => (ma, mb),
                (ra, rb) => {
                    failures.push(format!("no masked text: {sa}: {ra:?} {rb:?}"));
                    continue;
                }
            };
            placed += 1;
            match (run_text(&client, &ma).await, run_text(&client, &mb).await) {
                (Ok(ra), Ok(rb)) => {
                    let (na, nb) = (
                        normalized(ra, pair.a, &strategy),
                        normalized(rb, pair.b, &strategy),
                    );
                    if na != nb {
                        failures.push(format!(
                            "{strategy:?} tells them apart: {ma}\n  a: {na:?}\n  b: {nb:?}"
                        ));
                    }
                }
                // A type error of the masked value (e.g. a redacted number compared with
                // one) refuses the statement: nothing is learned, so it is no failure.
                (Err(ea), Err(eb)) if ea == eb => {}
                (ra, rb) => failures.push(format!(
                    "{strategy:?} answers one and not the other: {ma}: {ra:?} {rb:?}"
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(placed >= statements().len() * 3, "placed {placed}");
}

/// A predicate on another column of a masked relation still uses its index: the derived
/// table is pulled up into the statement.
#[tokio::test]
async fn masked_relations_keep_their_indexes() {
    let (_db, client, catalog) = shop().await;
    let profile = profile_masking(MaskStrategy::Partial {
        keep_last: DEMO_KEEP,
    });
    let sql = "SELECT c.id, c.email FROM public.customers c WHERE c.id = 42";
    let masked = masked_text(sql, &catalog, &profile).unwrap();
    client
        .batch_execute("SET enable_seqscan = off")
        .await
        .unwrap();
    let plan = run_text(&client, &format!("EXPLAIN {masked}"))
        .await
        .unwrap();
    let text: String = plan
        .into_iter()
        .flatten()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("Index Scan using customers_pkey"),
        "{masked}\n{text}"
    );
    assert!(!text.contains("Subquery Scan"), "not pulled up:\n{text}");
}

/// `true` when a JSON value shows a raw demo email anywhere.
fn shows_raw_email(v: &Value) -> bool {
    match v {
        Value::String(s) => s
            .split(|c: char| c.is_whitespace() || c == '"' || c == ',')
            .any(|w| {
                w.ends_with("@example.com")
                    && w.split('@')
                        .next()
                        .is_some_and(|l| !l.is_empty() && !l.chars().all(|c| c == '*'))
            }),
        Value::Array(a) => a.iter().any(shows_raw_email),
        Value::Object(o) => o.values().any(shows_raw_email),
        _ => false,
    }
}

/// Through the gateway as the demo agent, over MCP and `/v1`: every generated statement is
/// refused, or answered alike for `a` and `b`, and no answer shows a raw email.
#[tokio::test]
async fn through_the_gateway_every_spelling_is_refused_or_masked() {
    let env = demo_env().await;
    let shop = admin(&env.shop_db).await;
    let pair = pair(&shop).await;
    let mut failures = Vec::new();
    let (mut answered, mut refused) = (0, 0);
    for template in statements() {
        let (sa, sb) = (
            instantiate(&template, &pair, pair.a),
            instantiate(&template, &pair, pair.b),
        );
        let (ask_a, ask_b) = (ask(&env, &sa).await, ask(&env, &sb).await);
        for ((route, a), (_, b)) in ask_a.into_iter().zip(ask_b) {
            for (sql, answer) in [(&sa, &a), (&sb, &b)] {
                if let Ok(rows) = answer {
                    if shows_raw_email(rows) {
                        failures.push(format!("{route} shows a raw email: {sql}: {rows}"));
                    }
                }
            }
            // The asked-about customer's id, written X, so the two answers compare.
            let normalized = |answer: Answer, x: i64| {
                answer.map(|rows| {
                    rows.to_string()
                        .replace(&format!(":{x},"), ":X,")
                        .replace(&format!(":{x}}}"), ":X}")
                })
            };
            match (normalized(a, pair.a), normalized(b, pair.b)) {
                (Ok(va), Ok(vb)) => {
                    answered += 1;
                    if va != vb {
                        failures.push(format!(
                            "{route} tells them apart: {sa}\n  a: {va}\n  b: {vb}"
                        ));
                    }
                }
                // Refused alike, by a rule of the decision (not a failure of the database,
                // whose message would depend on the value).
                (Err(ea), Err(eb)) => {
                    refused += 1;
                    if ea != eb || ea.1.is_empty() || ea.1 == "tool_execution_failed" {
                        failures.push(format!(
                            "{route} refuses them unlike or without a rule: {sa}: {ea:?} {eb:?}"
                        ));
                    }
                }
                (ea, eb) => failures.push(format!(
                    "{route} answers one and not the other: {sa}: {ea:?} {eb:?}"
                )),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(answered + refused, statements().len() * 2);
    eprintln!("scan masks through the gateway: {answered} answered pairs, {refused} refused");
}

/// An answer: the rows, or the refusal's HTTP status and code.
type Answer = Result<Value, (u16, String)>;

/// `sql` asked as the demo agent over MCP and over `/v1`.
async fn ask(env: &common::env::DemoEnv, sql: &str) -> [(&'static str, Answer); 2] {
    let mcp = env.agent_query(json!({"sql": sql})).await;
    let error = &mcp.body["error"]["data"];
    let via_mcp = if mcp.body["error"].is_null() {
        Ok(json!(common::mcp::rows(&mcp)))
    } else {
        let status = error["status"].as_u64().and_then(|s| u16::try_from(s).ok());
        Err((
            status.unwrap_or(mcp.status),
            error["code"].as_str().unwrap_or_default().to_string(),
        ))
    };
    let proxy = common::http::client()
        .post(env.gateway.url("/v1/sources/shop/query"))
        .bearer_auth(&env.agent_key)
        .json(&json!({"sql": sql}))
        .send()
        .await
        .expect("proxy");
    let status = proxy.status().as_u16();
    let body: Value = proxy.json().await.unwrap_or(Value::Null);
    let via_v1 = if status == 200 {
        Ok(body["rows"].clone())
    } else {
        Err((
            status,
            body["code"].as_str().unwrap_or_default().to_string(),
        ))
    };
    [("mcp", via_mcp), ("v1", via_v1)]
}

/// The findings' examples as an agent sends them, and what PostgreSQL cannot see through
/// the derived tables, each refused with its own code.
#[tokio::test]
async fn the_reviews_examples_are_refused_with_their_reason() {
    let env = demo_env().await;
    let cases = [
        ("SELECT c.email, c.id FROM public.customers c WHERE c.id <= 30 ORDER BY (1)", "masked_column_misuse"),
        ("SELECT c.email, c.id FROM public.customers c WHERE c.id <= 30 ORDER BY -(-1)", "masked_column_misuse"),
        ("SELECT DISTINCT ON ((1)) c.email, c.id FROM public.customers c ORDER BY 1", "masked_column_misuse"),
        ("SELECT c.email, count(*) FROM public.customers c GROUP BY (1)", "masked_column_misuse"),
        ("SELECT c.id, c.email AS country FROM public.customers c ORDER BY (country)", "masked_column_misuse"),
        (
            "SELECT c.id, c.email, count(o.id) FROM public.customers c JOIN public.orders o ON o.customer_id = c.id GROUP BY c.id",
            "mask_grouping",
        ),
    ];
    for (sql, code) in cases {
        for (route, answer) in ask(&env, sql).await {
            match answer {
                Err((status, got)) => {
                    assert!(
                        status >= 400 && got == code,
                        "{route} {sql}: {status} {got}"
                    );
                }
                Ok(rows) => panic!("{route} {sql}: answered {rows}"),
            }
        }
    }
    // What the refusal advises runs, masked: group first, then join the relation; and a
    // GROUP BY of a masked relation's key without its masked column runs as it is.
    let a = env
        .agent_query(json!({"sql": "SELECT c.id, c.email, t.n FROM public.customers c JOIN (SELECT customer_id, count(*) AS n FROM public.orders GROUP BY customer_id) t ON t.customer_id = c.id WHERE c.id <= 3 ORDER BY c.id"}))
        .await;
    let r = common::mcp::rows(&a);
    assert!(
        !r.is_empty()
            && r.iter()
                .all(|row| row["email"].as_str().is_some_and(|e| e.starts_with('*'))),
        "{r:?}"
    );
    let a = env
        .agent_query(json!({"sql": "SELECT c.id, c.name, count(o.id) AS n FROM public.customers c JOIN public.orders o ON o.customer_id = c.id WHERE c.id <= 3 GROUP BY c.id ORDER BY c.id"}))
        .await;
    assert_eq!(common::mcp::rows(&a).len(), 3, "{:?}", a.body);
}

/// A hash mask computed by PostgreSQL at the scan equals the output mask's HMAC, so a
/// hashed column reads the same whether or not the scan masked it; equal values still join.
#[tokio::test]
async fn a_hash_at_the_scan_is_the_output_hash() {
    let env = demo_env().await;
    env.access(
        r#"
[[redactions]]
source = "shop"
column = "public.customers.email"
strategy = "hash"
"#,
    )
    .await;
    let a = env
        .agent_query(json!({"sql": "SELECT c.id, c.email FROM public.customers c WHERE c.id = 7"}))
        .await;
    let r = common::mcp::rows(&a);
    let shop = admin(&env.shop_db).await;
    let raw: String = shop
        .query_one("SELECT email FROM public.customers WHERE id = 7", &[])
        .await
        .unwrap()
        .get(0);
    let key: Vec<u8> = admin(&env.control_db)
        .await
        .query_one("SELECT mask_key FROM sources WHERE id = 'shop'", &[])
        .await
        .unwrap()
        .get(0);
    let want = interlock::governance::apply(&MaskStrategy::Hash, &json!(raw), &key);
    assert_eq!(r[0]["email"], want, "{:?}", a.body);
    let joined = env
        .agent_query(json!({"sql": "SELECT a.id FROM public.customers a JOIN public.customers b ON a.email = b.email WHERE a.id = 7 AND b.id = 7"}))
        .await;
    assert!(
        joined.body.to_string().contains("masked_column_misuse")
            || common::mcp::rows(&joined).len() == 1,
        "{:?}",
        joined.body
    );
}
