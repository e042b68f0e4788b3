//! `interlock policy simulate` and `interlock policy explain`, through a running gateway's
//! admin API (`/admin/policy/*`), so they decide with the catalogs and the policy clock the
//! gateway holds.

use std::time::Duration;

use anyhow::Context;
use reqwest::Method;
use serde_json::{json, Value};

use super::output::{print_json, print_table};
use super::remote::request_within;
use super::{ExplainArgs, SimulateArgs};

fn read(file: &std::path::Path) -> anyhow::Result<String> {
    std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
}

/// `interlock policy simulate`.
pub async fn simulate(args: SimulateArgs) -> anyhow::Result<()> {
    let body = json!({
        "file": read(&args.file)?,
        "since": args.since,
        "source": args.source,
        "identity": args.identity,
        "limit": args.limit,
        "examples": args.examples,
    });
    let report = request_within(
        &args.remote,
        Method::POST,
        "/admin/policy/simulate",
        Some(body),
        Duration::from_secs(3600),
    )
    .await
    .with_context(|| format!("{} was not simulated", args.file.display()))?;
    if args.json {
        print_json(&report)
    } else {
        summary(&report);
        Ok(())
    }
}

/// `interlock policy explain`.
pub async fn explain(args: ExplainArgs) -> anyhow::Result<()> {
    let oauth = !args.groups.is_empty() || !args.claims.is_empty();
    let mut body = json!({
        "identity": args.identity,
        "source": args.source,
        "sql": args.sql,
        "params": args.params,
        "max_rows": args.max_rows,
        "credential": if oauth { "oauth" } else { "api_key" },
        "groups": args.groups,
        "claims": args.claims.into_iter().collect::<serde_json::Map<String, Value>>(),
        "at": args.at,
    });
    if let Some(f) = &args.file {
        body["file"] = json!(read(f)?);
    }
    let v = request_within(
        &args.remote,
        Method::POST,
        "/admin/policy/explain",
        Some(body),
        Duration::from_secs(30),
    )
    .await?;
    print_json(&v)
}

fn count(v: &Value) -> String {
    v.as_u64().unwrap_or(0).to_string()
}

/// The report for a terminal: totals, the kinds of change, identities and rules, examples.
fn summary(r: &Value) {
    println!(
        "replayed {} of {} records in {:.0} ms ({:.0} records/s); {} would change, {} unchanged{}",
        count(&r["replayed"]),
        count(&r["records"]),
        r["elapsed_ms"].as_f64().unwrap_or(0.0),
        r["records_per_second"].as_f64().unwrap_or(0.0),
        count(&r["changed"]),
        count(&r["unchanged"]),
        if r["truncated"].as_bool() == Some(true) {
            " (limit reached: more records matched)"
        } else {
            ""
        }
    );
    if r["drift"].as_u64().unwrap_or(0) > 0 {
        println!(
            "note: {} records are decided differently by the live policy than when they were made (the policy or the catalog changed since)",
            count(&r["drift"])
        );
    }
    if r["cost_unknown"].as_u64().unwrap_or(0) > 0 {
        println!(
            "note: {} reads fall under the candidate's cost limits or rules over the plan but were not planned when they were made: judged without their cost step",
            count(&r["cost_unknown"])
        );
    }
    let object = |v: &Value| v.as_object().cloned().unwrap_or_default();
    for (reason, n) in object(&r["skipped"]) {
        println!("skipped {}: {reason}", count(&n));
    }
    let changes = object(&r["changes"]);
    if !changes.is_empty() {
        println!();
        print_table(
            &["CHANGE", "CALLS"],
            changes.iter().map(|(k, n)| vec![k.clone(), count(n)]),
        );
    }
    let identities: Vec<(String, Value)> = object(&r["by_identity"])
        .into_iter()
        .filter(|(_, c)| c["changed"].as_u64().unwrap_or(0) > 0)
        .collect();
    if !identities.is_empty() {
        println!();
        print_table(
            &["IDENTITY", "CALLS", "CHANGED", "HOW"],
            identities.iter().map(|(name, c)| {
                let how: Vec<String> = object(&c["changes"])
                    .iter()
                    .map(|(k, n)| format!("{k}={}", count(n)))
                    .collect();
                vec![
                    name.clone(),
                    count(&c["calls"]),
                    count(&c["changed"]),
                    how.join(" "),
                ]
            }),
        );
    }
    let rules = object(&r["by_rule"]);
    if !rules.is_empty() {
        println!();
        print_table(
            &["RULE", "CHANGES"],
            rules.iter().map(|(rule, kinds)| {
                let how: Vec<String> = object(kinds)
                    .iter()
                    .map(|(k, n)| format!("{k}={}", count(n)))
                    .collect();
                vec![rule.clone(), how.join(" ")]
            }),
        );
    }
    let examples = r["examples"].as_array().cloned().unwrap_or_default();
    if !examples.is_empty() {
        println!("\nexamples:");
        for e in examples {
            let statement: String = e["statement"]
                .as_str()
                .unwrap_or("")
                .chars()
                .take(100)
                .collect();
            println!(
                "  #{} {} on {}: {}\n    was {}\n    would be {}",
                e["seq"],
                e["identity"].as_str().unwrap_or(""),
                e["source"].as_str().unwrap_or(""),
                statement.replace('\n', " "),
                e["recorded"],
                e["would"],
            );
        }
    }
}
