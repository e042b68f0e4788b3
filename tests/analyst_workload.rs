//! Analysts' SQL is answered: a workload of ordinary reads over the demo shop (counts and
//! revenue by month, medians and percentiles, running totals, quartiles, JSON for a tool,
//! date formatting and binning, string cleanup, arrays, set-returning functions), each
//! tagged with the function family it exercises, sent through the gateway's `POST /mcp` as
//! an agent would. Every one must be answered with rows; the tags must name a function the
//! statement really calls and cover every allowed family the demo's types can reach; and
//! the refused-by-design list must be refused naming exactly its family.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeSet;

use common::env::demo_env;
use interlock::sql::functions::{self as catalogue, Family};
use interlock::sql::{classify, parse, resolve};
use serde_json::{json, Value};

/// Allowed families the demo's data cannot reach: it has no enum column, and no cast to a
/// user type is allowed. `tests/function_catalogue.rs` calls them over a type it creates.
const UNREACHABLE_ON_THE_DEMO: &[Family] = &[Family::Enum];

fn cases(file: &str) -> Vec<(Family, String)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/analyst")
        .join(file);
    std::fs::read_to_string(&path)
        .expect("fixture")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (family, sql) = l.split_once('\t').expect("family<TAB>sql");
            let family = Family::from_code(family)
                .unwrap_or_else(|| panic!("{}: unknown family {family}", path.display()));
            (family, sql.to_string())
        })
        .collect()
}

/// The functions `sql` calls, as the resolver records them against the demo's catalog.
fn functions_called(sql: &str, catalog: &interlock::sql::Catalog) -> Result<Vec<String>, String> {
    let limits = interlock::sql::parse::ParseLimits {
        max_bytes: interlock::sql::input::DEFAULT_MAX_SQL_BYTES,
        ..Default::default()
    };
    let parsed = parse(sql, 0, &limits).map_err(|e| e.to_string())?;
    let classification = classify(&parsed.statement);
    let analysis = resolve(classification.target, catalog).map_err(|e| e.to_string())?;
    Ok(analysis.functions.into_iter().collect())
}

#[tokio::test]
async fn analyst_reads_are_answered_and_refusals_name_their_family() {
    let env = demo_env().await;
    let db = common::admin(&env.shop_db).await;
    let catalog = common::catalog_of(&db, "public").await;

    let answered = cases("answered.tsv");
    assert!(answered.len() >= 200, "{} statements", answered.len());
    let mut problems = Vec::new();
    let mut covered = BTreeSet::new();
    for (family, sql) in &answered {
        match functions_called(sql, &catalog) {
            Ok(called) => {
                let families: BTreeSet<Family> = called
                    .iter()
                    .filter_map(|f| catalogue::entry(f))
                    .map(|e| e.family)
                    .collect();
                if !families.contains(family) {
                    problems.push(format!(
                        "{sql}\n   tagged {} but calls {called:?} ({families:?})",
                        family.code()
                    ));
                }
                covered.insert(*family);
            }
            Err(e) => problems.push(format!("{sql}\n   the resolver refuses it: {e}")),
        }
        let a = env.query(sql).await;
        let result = &a.body["result"];
        if a.status != 200 || result["isError"] != json!(false) {
            let why = a.body["error"]["data"]["reason"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| a.body.to_string());
            problems.push(format!("{sql}\n   not answered ({}): {why}", a.status));
        } else {
            // An answer is a JSON array of rows (possibly none: a filter may match nothing).
            common::mcp::rows(&a);
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} analyst statements went wrong:\n{}",
        problems.len(),
        answered.len(),
        problems.join("\n")
    );

    let missing: Vec<&str> = Family::ALL
        .iter()
        .filter(|f| f.allowed() && !covered.contains(f) && !UNREACHABLE_ON_THE_DEMO.contains(f))
        .map(|f| f.code())
        .collect();
    assert!(
        missing.is_empty(),
        "allowed families no statement exercises: {missing:?}"
    );

    let refused = cases("refused.tsv");
    let mut wrong = Vec::new();
    for (family, sql) in &refused {
        let a = env.query(sql).await;
        let data: &Value = &a.body["error"]["data"];
        let reason = data["reason"].as_str().unwrap_or_default();
        let named = format!("(family {}, ", family.code());
        if data["code"] != "sql_function_not_allowed" || !reason.contains(&named) {
            wrong.push(format!("{sql}\n   want {}: got {}", family.code(), a.body));
        }
    }
    assert!(
        wrong.is_empty(),
        "refusals by design:\n{}",
        wrong.join("\n")
    );
}

#[tokio::test]
async fn values_without_a_json_type_come_back_in_postgresql_text_or_are_refused_naming_the_cast() {
    let env = demo_env().await;
    let a = env
        .query(
            "SELECT interval '1 year 2 months 3 days 04:05:06.5' AS i, interval '0' AS z, \
         -interval '1 day 1 second' AS n, inet '10.0.0.1' AS a, inet '10.0.0.1/8' AS s, \
         cidr '10.0.0.0/8' AS c, inet '::1' AS v6, macaddr '08:00:2b:01:02:03' AS m, \
         point(1, 2) AS p, circle(point(0, 0), 1.5) AS r",
        )
        .await;
    assert_eq!(
        common::mcp::rows(&a),
        vec![json!({
            "i": "P1Y2M3DT4H5M6.5S", "z": "PT0S", "n": "P-1DT-1S", "a": "10.0.0.1",
            "s": "10.0.0.1/8", "c": "10.0.0.0/8", "v6": "::1", "m": "08:00:2b:01:02:03",
            "p": "(1,2)", "r": "<(0,0),1.5>"
        })]
    );
    let refused = env.query("SELECT int4range(1, 5) AS r").await;
    let data = &refused.body["error"]["data"];
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(data["code"], "result_type_unsupported");
    assert!(
        data["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("r::text"),
        "{data}"
    );
    let cast = env.query("SELECT int4range(1, 5)::text AS r").await;
    assert_eq!(common::mcp::rows(&cast), vec![json!({"r": "[1,5)"})]);
}
