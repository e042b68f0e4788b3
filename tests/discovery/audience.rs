//! Audience hiding: the HR-only document never surfaces for the reader, through any field of
//! any tool, and the visibility rule follows the access evaluator exactly.

use interlock::discovery::{
    discover, may_discover, related, visible, AssetRef, DiscoverQuery, DiscoveryError,
};
use serde_json::json;

use crate::fixtures::{disclosed, handbook_db, hr, profile, query, reader, search, HR_DOC};

#[tokio::test]
async fn hr_document_never_appears_for_the_reader() {
    let pool = handbook_db().await;
    let searches = [
        json!({"query": "salary bands", "expand_related": true, "limit": 100}),
        json!({"query": "salary", "expand_related": true}),
        json!({"query": "compensation promotion calibration", "expand_related": true}),
        json!({"entities": ["Compensation"], "expand_related": true}),
        json!({"category_path": "people/compensation", "expand_related": true}),
        json!({"limit": 100, "expand_related": true}),
    ];
    for args in searches {
        let seen = disclosed(&search(&pool, &reader(), &query(args.clone())).await);
        assert!(!seen.iter().any(|id| id == HR_DOC), "{args}: {seen:?}");
        // The same search discloses it to HR, so the check above is not vacuous.
        let hr_seen = disclosed(&search(&pool, &hr(), &query(args.clone())).await);
        assert!(hr_seen.iter().any(|id| id == HR_DOC), "{args}: {hr_seen:?}");
    }
    let client = pool.get().await.unwrap();
    // Related documents of assets that link to (or from) the HR document.
    for seed in ["performance-reviews", "manager-guide-reviews"] {
        let result = related(&client, "handbook", seed, &[], 100, &reader())
            .await
            .unwrap();
        let mut seen: Vec<&str> = result.results.iter().map(|h| h.asset.id.as_str()).collect();
        seen.extend(
            result
                .results
                .iter()
                .flat_map(|h| h.asset.relation_ids.iter().map(String::as_str)),
        );
        assert!(!seen.contains(&HR_DOC), "{seed}: {seen:?}");
        assert!(!seen.is_empty(), "{seed}");
        let hr_result = related(&client, "handbook", seed, &[], 100, &hr())
            .await
            .unwrap();
        assert!(
            hr_result.results.iter().any(|h| h.asset.id == HR_DOC),
            "{seed}"
        );
    }
    // Asking for the HR document itself is "not found", exactly like a missing id.
    for id in [HR_DOC, "no-such-document"] {
        let err = related(&client, "handbook", id, &[], 10, &reader())
            .await
            .unwrap_err();
        assert!(matches!(err, DiscoveryError::AssetNotFound), "{id}: {err}");
        assert_eq!(err.to_string(), "asset not found");
    }
}

#[test]
fn visibility_follows_the_evaluator() {
    let labels = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let reader = reader();
    let managers = profile(&[("m", &["allow discover audience.managers"])]);
    let denied_by_star = profile(&[("x", &["allow discover audience.*", "deny discover *"])]);
    let tables = profile(&[(
        "t",
        &[
            "allow discover *",
            "allow describe public.*",
            "deny describe public.secrets",
        ],
    )]);
    let cases: Vec<(
        &str,
        &interlock::governance::AccessProfile,
        &str,
        Vec<String>,
        bool,
    )> = vec![
        (
            "reader sees employees",
            &reader,
            "document",
            labels(&["employees"]),
            true,
        ),
        (
            "reader misses hr-only",
            &reader,
            "document",
            labels(&["hr"]),
            false,
        ),
        (
            "any admitted label is enough",
            &reader,
            "document",
            labels(&["hr", "managers"]),
            true,
        ),
        (
            "public needs audience.public",
            &reader,
            "document",
            labels(&[]),
            true,
        ),
        (
            "managers only see managers",
            &managers,
            "document",
            labels(&["employees"]),
            false,
        ),
        (
            "managers see shared docs",
            &managers,
            "document",
            labels(&["hr", "managers"]),
            true,
        ),
        (
            "managers miss public",
            &managers,
            "document",
            labels(&[]),
            false,
        ),
        (
            "deny * wins",
            &denied_by_star,
            "document",
            labels(&["employees"]),
            false,
        ),
        (
            "tables follow describe",
            &tables,
            "table",
            labels(&[]),
            true,
        ),
    ];
    for (name, p, source_type, audiences, want) in cases {
        let asset = AssetRef {
            source_type,
            id: "table:public.orders",
            audiences: &audiences,
        };
        assert_eq!(visible(p, &asset), want, "{name}");
    }
    let secret = AssetRef {
        source_type: "table",
        id: "table:public.secrets",
        audiences: &[],
    };
    assert!(!visible(&tables, &secret));
    // A table asset is never visible through audience grants alone.
    assert!(!visible(
        &reader,
        &AssetRef {
            source_type: "table",
            id: "table:public.orders",
            audiences: &[]
        }
    ));

    let may = [
        (reader.clone(), true),
        (managers, true),
        (profile(&[("p", &["allow discover audience.public"])]), true),
        (profile(&[("any", &["allow discover *"])]), true),
        (denied_by_star, false),
        (
            profile(&[("r", &["allow read public.*", "allow describe *"])]),
            false,
        ),
        (
            profile(&[(
                "a",
                &["allow discover audience.hr", "deny discover audience.hr"],
            )]),
            false,
        ),
        (
            profile(&[(
                "a",
                &["allow discover audience.*", "deny discover audience.*"],
            )]),
            false,
        ),
        (profile(&[]), false),
    ];
    for (p, want) in may {
        assert_eq!(may_discover(&p), want, "{p:?}");
    }
}

#[tokio::test]
async fn callers_without_discover_are_refused() {
    let pool = handbook_db().await;
    let client = pool.get().await.unwrap();
    let none = profile(&[("r", &["allow read public.*"])]);
    let err = discover(&client, "handbook", &none, &DiscoverQuery::default())
        .await
        .unwrap_err();
    assert!(matches!(err, DiscoveryError::Forbidden), "{err}");
    // related() answers "not found" rather than confirming the asset exists.
    let err = related(&client, "handbook", "pto-policy", &[], 10, &none)
        .await
        .unwrap_err();
    assert!(matches!(err, DiscoveryError::AssetNotFound), "{err}");
    let err = discover(&client, "nope", &reader(), &DiscoverQuery::default())
        .await
        .unwrap_err();
    assert!(matches!(err, DiscoveryError::SourceNotFound), "{err}");
}
