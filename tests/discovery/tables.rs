//! Table assets of a SQL source: one per catalogued table, added, updated and removed by
//! sync, searchable, and visible only to callers who may describe the table.

use interlock::discovery::{
    discover, parse_document, sync_table_assets, table_asset_id, table_of_asset_id, upsert_assets,
    DiscoverQuery, TableAssetInput,
};
use serde_json::json;

use crate::fixtures::{profile, query};
use crate::harness::fresh_db;

fn table(schema: &str, name: &str, comment: Option<&str>, columns: &[&str]) -> TableAssetInput {
    TableAssetInput {
        schema: schema.into(),
        table: name.into(),
        comment: comment.map(String::from),
        columns: columns.iter().map(|c| c.to_string()).collect(),
    }
}

async fn table_ids(client: &deadpool_postgres::Client) -> Vec<(String, String, String)> {
    client
        .query(
            "SELECT id, title, body FROM discovery_assets
              WHERE source_id = 'shop' AND source_type = 'table' ORDER BY id",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
}

#[tokio::test]
async fn sync_adds_updates_and_removes_table_assets() {
    let pool = fresh_db().await;
    let client = pool.get().await.unwrap();
    let first = [
        table(
            "public",
            "orders",
            Some("Customer orders"),
            &["id", "customer_id", "total"],
        ),
        table("public", "customers", None, &["id", "email"]),
        table(
            "hr",
            "salaries",
            Some("Employee pay"),
            &["employee_id", "amount"],
        ),
    ];
    assert_eq!(sync_table_assets(&client, "shop", &first).await.unwrap(), 3);
    let stored = table_ids(&client).await;
    assert_eq!(
        stored,
        vec![
            (
                "table:hr.salaries".into(),
                "hr.salaries".into(),
                "Employee pay\n\nColumns: employee_id, amount".into()
            ),
            (
                "table:public.customers".into(),
                "public.customers".into(),
                "Columns: id, email".into()
            ),
            (
                "table:public.orders".into(),
                "public.orders".into(),
                "Customer orders\n\nColumns: id, customer_id, total".into()
            ),
        ]
    );
    let before: chrono::DateTime<chrono::Utc> = client
        .query_one(
            "SELECT updated_at FROM discovery_assets WHERE id = 'table:public.customers'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    // Second scan: customers unchanged, orders gains a column, salaries dropped, products new.
    let second = [
        table(
            "public",
            "orders",
            Some("Customer orders"),
            &["id", "customer_id", "total", "status"],
        ),
        table("public", "customers", None, &["id", "email"]),
        table("public", "products", Some("ToolCatalog"), &["id", "name"]),
    ];
    assert_eq!(
        sync_table_assets(&client, "shop", &second).await.unwrap(),
        3
    );
    let ids: Vec<String> = table_ids(&client).await.into_iter().map(|t| t.0).collect();
    assert_eq!(
        ids,
        vec![
            "table:public.customers",
            "table:public.orders",
            "table:public.products"
        ]
    );
    let after: chrono::DateTime<chrono::Utc> = client
        .query_one(
            "SELECT updated_at FROM discovery_assets WHERE id = 'table:public.customers'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(before, after, "an unchanged table keeps its updated_at");
    // A source's documents are untouched by a table sync, even one that removes every table.
    let note = parse_document(
        "notes/readme.md",
        "# Shop data notes\n\nWhere the shop data lives.",
    )
    .unwrap();
    upsert_assets(&client, "shop", &[note]).await.unwrap();
    assert_eq!(sync_table_assets(&client, "shop", &[]).await.unwrap(), 0);
    assert!(table_ids(&client).await.is_empty());
    let left: Vec<String> = client
        .query(
            "SELECT id FROM discovery_assets WHERE source_id = 'shop'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(left, vec!["notes/readme"]);
}

#[tokio::test]
async fn table_assets_follow_describe_rights() {
    let pool = fresh_db().await;
    let client = pool.get().await.unwrap();
    let tables = [
        table(
            "public",
            "orders",
            Some("Customer orders with totals and status"),
            &["id", "total"],
        ),
        table(
            "public",
            "customers",
            Some("Customers and their contact details"),
            &["id", "email"],
        ),
        table(
            "hr",
            "salaries",
            Some("Employee salaries"),
            &["employee_id", "amount"],
        ),
    ];
    sync_table_assets(&client, "shop", &tables).await.unwrap();
    let analyst = profile(&[(
        "analyst",
        &[
            "allow discover *",
            "allow describe public.*",
            "deny describe hr.*",
            "deny describe public.customers",
        ],
    )]);
    let cases = [
        (json!({"limit": 100}), vec!["table:public.orders"]),
        (json!({"query": "salaries"}), vec![]),
        (
            json!({"query": "customer orders"}),
            vec!["table:public.orders"],
        ),
        (
            json!({"source_types": ["table"], "document_types": ["table"]}),
            vec!["table:public.orders"],
        ),
        (json!({"source_types": ["document"]}), vec![]),
        (
            json!({"category_path": "public"}),
            vec!["table:public.orders"],
        ),
        (json!({"audience": ["public"]}), vec![]),
    ];
    for (args, want) in cases {
        let result = discover(&client, "shop", &analyst, &query(args.clone()))
            .await
            .unwrap();
        let got: Vec<&str> = result.results.iter().map(|h| h.asset.id.as_str()).collect();
        assert_eq!(got, want, "{args}");
    }
    let dba = profile(&[("dba", &["allow discover *", "allow describe *"])]);
    let all = discover(
        &client,
        "shop",
        &dba,
        &DiscoverQuery {
            limit: 100,
            ..DiscoverQuery::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(all.results.len(), 3);
}

#[test]
fn table_ids_round_trip() {
    let cases = [
        ("public", "orders", "table:public.orders"),
        ("app", "Odd.Name", "table:app.\"Odd.Name\""),
        ("My Schema", "t", "table:\"My Schema\".t"),
    ];
    for (schema, name, id) in cases {
        assert_eq!(table_asset_id(schema, name), id);
        assert_eq!(
            table_of_asset_id(id),
            Some((schema.to_string(), name.to_string()))
        );
    }
    assert_eq!(table_of_asset_id("pto-policy"), None);
    assert_eq!(table_of_asset_id("table:public.*"), None);
}
