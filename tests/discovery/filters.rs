//! Every `interlock_discover` filter, checked against an oracle computed in Rust from the
//! handbook files, plus the argument bounds.

use chrono::{DateTime, Utc};
use interlock::discovery::{DiscoverQuery, NewAsset};
use serde_json::{json, Value};

use crate::fixtures::{handbook, handbook_db, hr, query, reader, search, HR_DOC};

type Pred = fn(&NewAsset) -> bool;

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|x| x.eq_ignore_ascii_case(item))
}

/// What the reader should see for `pred`, newest first (the no-query order).
fn oracle(pred: Pred, include_hr: bool) -> Vec<String> {
    let mut assets: Vec<NewAsset> = handbook()
        .into_iter()
        .filter(|a| include_hr || a.audiences != vec!["hr".to_string()])
        .filter(pred)
        .collect();
    assets.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.id.cmp(&b.id)));
    assets.into_iter().map(|a| a.id).collect()
}

#[tokio::test]
async fn each_filter_matches_the_oracle() {
    let pool = handbook_db().await;
    let cases: Vec<(Value, Pred)> = vec![
        (json!({}), |_| true),
        (json!({"source_types": ["document"]}), |_| true),
        (json!({"source_types": ["table"]}), |_| false),
        (json!({"document_types": ["faq"]}), |a| {
            a.document_type == "faq"
        }),
        (json!({"document_types": ["Policy", "runbook"]}), |a| {
            ["policy", "runbook"].contains(&a.document_type.as_str())
        }),
        (json!({"category_path": "people"}), |a| {
            a.category_path.starts_with("people/")
        }),
        (json!({"category_path": "/people/leave/"}), |a| {
            a.category_path == "people/leave"
        }),
        (json!({"category_path": "people/lea"}), |_| false),
        (json!({"category_path": "engineering/oncall"}), |a| {
            a.category_path == "engineering/oncall"
        }),
        (
            json!({"time_range": {"from": "2025-10-01T00:00:00Z", "to": "2025-12-31T23:59:59Z"}}),
            |a| {
                let u = a.updated_at.unwrap();
                u >= at("2025-10-01T00:00:00Z") && u <= at("2025-12-31T23:59:59Z")
            },
        ),
        (
            json!({"time_range": {"from": "2026-01-01T00:00:00Z"}}),
            |a| a.updated_at.unwrap() >= at("2026-01-01T00:00:00Z"),
        ),
        (json!({"time_range": {"to": "2024-06-30T00:00:00Z"}}), |a| {
            a.updated_at.unwrap() <= at("2024-06-30T00:00:00Z")
        }),
        (json!({"audience": ["managers"]}), |a| {
            has(&a.audiences, "managers")
        }),
        (json!({"audience": ["Engineering", "sales"]}), |a| {
            has(&a.audiences, "engineering") || has(&a.audiences, "sales")
        }),
        (json!({"audience": ["public"]}), |a| a.audiences.is_empty()),
        (json!({"audience": ["hr"]}), |_| false),
        (json!({"entities": ["okta"]}), |a| has(&a.entities, "okta")),
        (json!({"entities": ["PagerDuty", "Brex"]}), |a| {
            has(&a.entities, "pagerduty") || has(&a.entities, "brex")
        }),
        (
            json!({"category_path": "finance", "entities": ["Expensify"], "document_types": ["policy"]}),
            |a| {
                a.category_path.starts_with("finance/")
                    && has(&a.entities, "expensify")
                    && a.document_type == "policy"
            },
        ),
    ];
    for (mut args, pred) in cases {
        args["limit"] = json!(100);
        let result = search(&pool, &reader(), &query(args.clone())).await;
        let got: Vec<String> = result.results.iter().map(|h| h.asset.id.clone()).collect();
        assert_eq!(got, oracle(pred, false), "{args}");
        assert!(!result.truncated, "{args}");
        assert_eq!(result.total_returned, got.len(), "{args}");
    }
    // The HR audience filter finds the HR document only for a caller admitted to it.
    let result = search(&pool, &hr(), &query(json!({"audience": ["hr"]}))).await;
    assert_eq!(crate::fixtures::ids(&result), vec![HR_DOC]);
}

#[tokio::test]
async fn limit_is_bounded_and_defaults_to_ten() {
    let pool = handbook_db().await;
    let visible = oracle(|_| true, false);
    assert!(visible.len() > 10);
    let cases = [
        (json!({}), 10, true),
        (json!({"limit": 1}), 1, true),
        (json!({"limit": 7, "query": "Northwind"}), 7, true),
        (json!({"limit": 100}), visible.len(), false),
        (json!({"limit": visible.len()}), visible.len(), false),
        (json!({"limit": visible.len() - 1}), visible.len() - 1, true),
    ];
    for (args, want, truncated) in cases {
        let result = search(&pool, &reader(), &query(args.clone())).await;
        assert_eq!(result.results.len(), want, "{args}");
        assert_eq!(result.truncated, truncated, "{args}");
    }
    // Hidden documents never take a place within the limit: the newest document is the HR
    // one, and the reader still gets a full page of the newest visible ones.
    let page = search(&pool, &reader(), &query(json!({"limit": 3}))).await;
    let newest = search(&pool, &hr(), &query(json!({"limit": 1}))).await;
    assert_eq!(crate::fixtures::ids(&newest), vec![HR_DOC]);
    assert_eq!(
        crate::fixtures::ids(&page),
        visible[..3].iter().map(String::as_str).collect::<Vec<_>>()
    );
}

#[test]
fn arguments_are_checked() {
    let refused = [
        (json!({"limit": 0}), "limit"),
        (json!({"limit": 101}), "limit"),
        (json!({"limit": "10"}), "limit"),
        (json!({"limit": 2.5}), "limit"),
        (json!({"time_range": {"from": "yesterday"}}), "RFC 3339"),
        (
            json!({"time_range": {"since": "2025-01-01T00:00:00Z"}}),
            "since",
        ),
        (
            json!({"time_range": {"from": "2026-01-01T00:00:00Z", "to": "2025-01-01T00:00:00Z"}}),
            "after",
        ),
        (json!({"audience": "hr"}), "array"),
        (json!({"entities": [""]}), "empty"),
        (json!({"expand_related": "yes"}), "boolean"),
        (json!({"sql": "select 1"}), "unknown argument"),
    ];
    for (args, want) in refused {
        let err = DiscoverQuery::from_arguments(args.as_object().unwrap()).unwrap_err();
        assert!(err.contains(want), "{args}: {err}");
    }
    let q = query(json!({"source_id": "handbook", "query": "  ", "category_path": "/a//b/"}));
    assert_eq!(q.limit, 10);
    assert_eq!(q.query, None);
    assert_eq!(q.category_path.as_deref(), Some("a/b"));
}

#[tokio::test]
async fn result_json_shape() {
    let pool = handbook_db().await;
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    let base = [
        "category_path",
        "created_at",
        "document_type",
        "id",
        "relation_ids",
        "score",
        "snippet",
        "source_type",
        "title",
        "updated_at",
    ];
    let plain = search(
        &pool,
        &reader(),
        &query(json!({"query": "vacation", "limit": 1})),
    )
    .await;
    let v = serde_json::to_value(&plain).unwrap();
    assert_eq!(
        keys(&v),
        vec!["results", "source_id", "total_returned", "truncated"]
    );
    assert_eq!(keys(&v["results"][0]), base.to_vec());
    let expanded = search(
        &pool,
        &reader(),
        &query(json!({"query": "vacation", "limit": 1, "expand_related": true})),
    )
    .await;
    let v = serde_json::to_value(&expanded).unwrap();
    let hit = &v["results"][0];
    assert_eq!(hit["id"], "pto-policy");
    let mut with_related = base.to_vec();
    with_related.push("related");
    with_related.sort();
    assert_eq!(keys(hit), with_related);
    let mut related_keys = base.to_vec();
    related_keys.push("relations");
    related_keys.sort();
    for entry in hit["related"].as_array().unwrap() {
        assert_eq!(keys(entry), related_keys);
    }
    let related_ids: Vec<&str> = hit["related"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    let mut relation_ids: Vec<&str> = hit["relation_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    let mut sorted = related_ids.clone();
    sorted.sort_unstable();
    relation_ids.sort_unstable();
    assert_eq!(sorted, relation_ids, "expansion and relation_ids agree");
}
