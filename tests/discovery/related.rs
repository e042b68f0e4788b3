//! Relations: one hop, both directions, same source only. The handbook's one relation into
//! the `shop` source is never followed or disclosed, even when the target exists there and
//! the caller may see it; an asset id present in several sources is resolved only among the
//! sources the caller may discover.

use interlock::discovery::{
    asset_sources, related, related_documents, resolve_asset_source, sync_table_assets,
    upsert_assets, DiscoveryError, NewAsset, NewRelation, RelatedQuery, TableAssetInput,
};
use interlock::governance::AccessProfile;
use serde_json::json;

use crate::fixtures::{disclosed, handbook_db, profile, query, reader, search, READER};

fn shop_products() -> TableAssetInput {
    TableAssetInput {
        schema: "public".into(),
        table: "products".into(),
        comment: Some("Products sold in stores and online".into()),
        columns: vec!["id".into(), "name".into(), "price".into()],
    }
}

/// A reader on `handbook` who also may describe every table of `shop`.
fn shop_profile() -> AccessProfile {
    profile(&[("analyst", &["allow discover *", "allow describe public.*"])])
}

#[tokio::test]
async fn cross_source_relations_are_never_followed() {
    let pool = handbook_db().await;
    let client = pool.get().await.unwrap();
    // The target of the cross-source relation exists in `shop`, and the same id even exists
    // in `handbook`'s neighbour source `wiki`: neither may leak into handbook answers.
    sync_table_assets(&client, "shop", &[shop_products()])
        .await
        .unwrap();
    assert_eq!(
        asset_sources(&client, "table:public.products")
            .await
            .unwrap(),
        vec!["shop"]
    );
    let stored: i64 = client
        .query_one(
            "SELECT count(*) FROM asset_relations WHERE source_id = 'handbook' AND to_source_id = 'shop'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stored, 1, "the relation is stored as ingested");

    let reader_everywhere = profile(&[("all", &["allow discover *", "allow describe *"])]);
    for p in [reader(), reader_everywhere.clone()] {
        let result = search(
            &pool,
            &p,
            &query(json!({"query": "employee discount", "expand_related": true})),
        )
        .await;
        let hit = result
            .results
            .iter()
            .find(|h| h.asset.id == "staff-discount")
            .expect("found");
        assert_eq!(hit.asset.relation_ids, vec!["return-policy-customers"]);
        let seen = disclosed(&result);
        assert!(!seen.iter().any(|id| id.starts_with("table:")), "{seen:?}");
        let rel = related(&client, "handbook", "staff-discount", &[], 100, &p)
            .await
            .unwrap();
        let ids: Vec<&str> = rel.results.iter().map(|h| h.asset.id.as_str()).collect();
        assert_eq!(ids, vec!["return-policy-customers"]);
        let json = serde_json::to_string(&rel).unwrap();
        assert!(
            !json.contains("\"shop\"") && !json.contains("table:"),
            "{json}"
        );
    }
    // From the shop side, the handbook document that points at the table is not related.
    let rel = related(
        &client,
        "shop",
        "table:public.products",
        &[],
        100,
        &shop_profile(),
    )
    .await
    .unwrap();
    assert!(rel.results.is_empty(), "{:?}", rel.results);
}

#[tokio::test]
async fn related_documents_follow_both_directions_and_filter_types() {
    let pool = handbook_db().await;
    let client = pool.get().await.unwrap();
    type Link<'a> = (&'a str, &'a str, &'a str);
    let cases: Vec<(&str, Vec<&str>, Vec<Link>)> = vec![
        // pto-policy declares four relations; sick-leave and parental-leave also point back.
        (
            "pto-policy",
            vec![],
            vec![
                ("public-holidays-2026", "related_to", "incoming"),
                ("public-holidays-2026", "related_to", "outgoing"),
                ("parental-leave", "related_to", "incoming"),
                ("parental-leave", "related_to", "outgoing"),
                ("sick-leave", "related_to", "incoming"),
                ("sick-leave", "related_to", "outgoing"),
                ("pto-policy-2024", "supersedes", "outgoing"),
            ],
        ),
        (
            "pto-policy",
            vec!["supersedes"],
            vec![("pto-policy-2024", "supersedes", "outgoing")],
        ),
        (
            "pto-policy-2024",
            vec![],
            vec![("pto-policy", "supersedes", "incoming")],
        ),
        (
            "expense-policy",
            vec!["references"],
            vec![
                ("per-diem-rates", "references", "outgoing"),
                ("learning-budget", "references", "incoming"),
            ],
        ),
        ("learning-budget", vec!["nothing-of-this-type"], vec![]),
    ];
    for (seed, types, want) in cases {
        let types: Vec<String> = types.into_iter().map(String::from).collect();
        let result = related(&client, "handbook", seed, &types, 100, &reader())
            .await
            .unwrap();
        let got: Vec<(&str, &str, &str)> = result
            .results
            .iter()
            .flat_map(|h| {
                h.relations
                    .iter()
                    .map(move |r| (h.asset.id.as_str(), r.relation_type.as_str(), r.direction))
            })
            .collect();
        assert_eq!(got, want, "{seed} {types:?}");
        assert_eq!(result.source_id, "handbook");
        assert!(
            result
                .results
                .iter()
                .all(|h| !h.asset.relation_ids.is_empty()),
            "{seed}"
        );
    }
    let limited = related(&client, "handbook", "pto-policy", &[], 2, &reader())
        .await
        .unwrap();
    assert_eq!((limited.total_returned, limited.truncated), (2, true));
    let err = related(&client, "handbook", "pto-policy", &[], 0, &reader())
        .await
        .unwrap_err();
    assert!(matches!(err, DiscoveryError::Invalid(_)), "{err}");

    let args = json!({"asset_id": "pto-policy", "relation_types": ["supersedes"]});
    let q = RelatedQuery::from_arguments(args.as_object().unwrap()).unwrap();
    assert_eq!((q.asset_id.as_str(), q.limit), ("pto-policy", 10));
    let bad = json!({"asset_id": "x", "source_id": "shop"});
    assert!(RelatedQuery::from_arguments(bad.as_object().unwrap()).is_err());
}

#[tokio::test]
async fn asset_ids_are_resolved_among_discoverable_sources() {
    let pool = handbook_db().await;
    let client = pool.get().await.unwrap();
    // `wiki` also holds an asset called `pto-policy`, meant for its own `staff` audience.
    let twin = NewAsset {
        id: "pto-policy".into(),
        source_type: "document".into(),
        document_type: "page".into(),
        title: "Wiki PTO notes".into(),
        body: "Notes".into(),
        audiences: vec!["staff".into()],
        relations: vec![NewRelation {
            relation_type: "related_to".into(),
            to_asset: "x".into(),
            to_source: None,
        }],
        ..NewAsset::default()
    };
    upsert_assets(&client, "wiki", &[twin]).await.unwrap();
    let wiki_reader = profile(&[("w", &["allow discover audience.staff"])]);
    let wiki_other = profile(&[("w", &["allow discover audience.contractors"])]);
    type Candidates<'a> = Vec<(&'a str, AccessProfile)>;
    let cases: Vec<(&str, Candidates, Result<&str, &str>)> = vec![
        ("pto-policy", vec![("handbook", reader())], Ok("handbook")),
        (
            "pto-policy",
            vec![("wiki", wiki_reader.clone())],
            Ok("wiki"),
        ),
        (
            "pto-policy",
            vec![("handbook", reader()), ("wiki", wiki_other.clone())],
            Ok("handbook"),
        ),
        (
            "pto-policy",
            vec![("handbook", reader()), ("wiki", wiki_reader.clone())],
            Err("ambiguous"),
        ),
        ("pto-policy", vec![], Err("not found")),
        (
            "salary-bands-2026",
            vec![("handbook", reader())],
            Err("not found"),
        ),
        (
            "pto-policy",
            vec![("handbook", profile(&[("n", &["allow read *"])]))],
            Err("not found"),
        ),
    ];
    for (id, candidates, want) in cases {
        let candidates: Vec<(String, AccessProfile)> = candidates
            .into_iter()
            .map(|(s, p)| (s.to_string(), p))
            .collect();
        let got = resolve_asset_source(&client, id, &candidates).await;
        match (got, want) {
            (Ok(source), Ok(w)) => assert_eq!(source, w, "{id}"),
            (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{id}: {e}"),
            (got, want) => panic!("{id}: got {got:?}, want {want:?}"),
        }
    }
    let both = vec![
        ("handbook".to_string(), profile(&[("r", READER)])),
        ("wiki".to_string(), wiki_other),
    ];
    let result = related_documents(&client, "pto-policy", &[], 3, &both)
        .await
        .unwrap();
    assert_eq!(result.source_id, "handbook");
    assert_eq!(result.results.len(), 3);
}
