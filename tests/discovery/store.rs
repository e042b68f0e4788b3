//! Index writes: relations are replaced per upserted asset, timestamps follow content
//! changes, an invalid batch writes nothing, and a batch inside a transaction is atomic.

use interlock::discovery::{
    parse_json_lines, remove_assets, replace_documents, upsert_assets, DiscoveryError,
};

use crate::harness::fresh_db;

async fn relations(
    client: &deadpool_postgres::Client,
    from: &str,
) -> Vec<(String, String, String)> {
    client
        .query(
            "SELECT relation_type, to_source_id, to_asset FROM asset_relations
              WHERE source_id = 'wiki' AND from_asset = $1 ORDER BY 1, 2, 3",
            &[&from],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

async fn count(client: &deadpool_postgres::Client) -> i64 {
    client
        .query_one(
            "SELECT count(*) FROM discovery_assets WHERE source_id = 'wiki'",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn upserts_replace_relations_and_keep_created() {
    let pool = fresh_db().await;
    let client = pool.get().await.unwrap();
    let v1 = parse_json_lines(concat!(
        r#"{"id": "a", "title": "A", "body": "first", "created": "2025-01-01", "relations": [{"type": "related_to", "to": "b"}, {"type": "references", "to": "x", "source": "shop"}]}"#,
        "\n",
        r#"{"id": "b", "title": "B", "body": "second"}"#
    ))
    .unwrap();
    assert_eq!(upsert_assets(&client, "wiki", &v1).await.unwrap(), 2);
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        relations(&client, "a").await,
        vec![s("references", "shop", "x"), s("related_to", "wiki", "b")]
    );
    let v2 = parse_json_lines(
        r#"{"id": "a", "title": "A2", "body": "changed", "relations": [{"type": "supersedes", "to": "b"}]}"#,
    )
    .unwrap();
    upsert_assets(&client, "wiki", &v2).await.unwrap();
    assert_eq!(
        relations(&client, "a").await,
        vec![s("supersedes", "wiki", "b")]
    );
    let row = client
        .query_one(
            "SELECT title, created_at = '2025-01-01T00:00:00Z', updated_at > created_at
               FROM discovery_assets WHERE source_id = 'wiki' AND id = 'a'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (
            row.get::<_, String>(0),
            row.get::<_, bool>(1),
            row.get::<_, bool>(2)
        ),
        ("A2".to_string(), true, true),
        "created_at is kept, updated_at moves with the content"
    );
    // replace_documents drops documents that are no longer in the collection.
    replace_documents(&client, "wiki", &v2).await.unwrap();
    assert_eq!(count(&client).await, 1);
    assert_eq!(
        remove_assets(&client, "wiki", &["a".to_string()])
            .await
            .unwrap(),
        1
    );
    assert_eq!(count(&client).await, 0);
    assert!(relations(&client, "a").await.is_empty());
}

#[tokio::test]
async fn invalid_batches_write_nothing() {
    let pool = fresh_db().await;
    let mut client = pool.get().await.unwrap();
    let good = parse_json_lines(r#"{"id": "ok", "title": "Ok"}"#).unwrap();
    let mut bad = good.clone();
    bad.push(interlock::discovery::NewAsset {
        id: "x".repeat(201),
        ..good[0].clone()
    });
    let err = upsert_assets(&client, "wiki", &bad).await.unwrap_err();
    assert!(
        matches!(err, DiscoveryError::Invalid(ref m) if m.contains("longer than 200")),
        "{err}"
    );
    let mut twice = good.clone();
    twice.extend(good.clone());
    let err = upsert_assets(&client, "wiki", &twice).await.unwrap_err();
    assert!(err.to_string().contains("appears twice"), "{err}");
    assert_eq!(count(&client).await, 0);

    // A database failure mid-batch inside a transaction leaves nothing behind: the second
    // asset's source does not exist, so its insert fails after the first succeeded.
    let tx = client.transaction().await.unwrap();
    upsert_assets(&tx, "wiki", &good).await.unwrap();
    let err = upsert_assets(&tx, "no-such-source", &good)
        .await
        .unwrap_err();
    assert!(matches!(err, DiscoveryError::Database(_)), "{err}");
    assert_eq!(err.to_string(), "control database error");
    drop(tx);
    assert_eq!(count(&client).await, 0);
}
