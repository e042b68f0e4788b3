//! Shared fixtures: access profiles built from statement strings, and the demo handbook
//! loaded into a fresh database.

use std::path::PathBuf;

use deadpool_postgres::Pool;
use interlock::discovery::{
    discover, load_directory, upsert_assets, DiscoverQuery, DiscoverResult, NewAsset,
};
use interlock::governance::{AccessProfile, SourceRole};

/// The id of the one handbook document meant for `hr` only.
pub const HR_DOC: &str = "salary-bands-2026";

/// The statements of the demo `reader` role (config/demo/handbook-access.toml).
pub const READER: &[&str] = &["allow discover audience.*", "deny discover audience.hr"];

/// A profile holding one role per `(name, statements)`.
pub fn profile(roles: &[(&str, &[&str])]) -> AccessProfile {
    AccessProfile {
        roles: roles
            .iter()
            .map(|(name, statements)| SourceRole {
                name: name.to_string(),
                statements: statements
                    .iter()
                    .map(|s| s.parse().unwrap_or_else(|e| panic!("{s}: {e}")))
                    .collect(),
            })
            .collect(),
        ..AccessProfile::default()
    }
}

/// The demo agent's profile on `handbook`.
pub fn reader() -> AccessProfile {
    profile(&[("reader", READER)])
}

/// A profile that sees every audience, HR included.
pub fn hr() -> AccessProfile {
    profile(&[("hr", &["allow discover audience.*"])])
}

pub fn handbook_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("config/demo/handbook")
}

pub fn handbook() -> Vec<NewAsset> {
    load_directory(&handbook_dir()).expect("the demo handbook loads")
}

/// A fresh database with the handbook loaded into `handbook` in one transaction.
pub async fn handbook_db() -> Pool {
    let pool = crate::harness::fresh_db().await;
    let mut client = pool.get().await.expect("client");
    let tx = client.transaction().await.expect("transaction");
    let assets = handbook();
    let written = upsert_assets(&tx, "handbook", &assets)
        .await
        .expect("upsert");
    assert_eq!(written, assets.len());
    tx.commit().await.expect("commit");
    drop(client);
    pool
}

/// Runs a discover query on `handbook`.
pub async fn search(pool: &Pool, profile: &AccessProfile, q: &DiscoverQuery) -> DiscoverResult {
    let client = pool.get().await.expect("client");
    discover(&client, "handbook", profile, q)
        .await
        .unwrap_or_else(|e| panic!("{q:?}: {e}"))
}

/// A query from tool arguments.
pub fn query(args: serde_json::Value) -> DiscoverQuery {
    let map = args.as_object().cloned().expect("object");
    DiscoverQuery::from_arguments(&map).unwrap_or_else(|e| panic!("{args}: {e}"))
}

/// Every id a result discloses: results, their relation ids, related entries and theirs.
pub fn disclosed(result: &DiscoverResult) -> Vec<String> {
    let mut ids = Vec::new();
    for hit in &result.results {
        ids.push(hit.asset.id.clone());
        ids.extend(hit.asset.relation_ids.iter().cloned());
        for rel in hit.related.iter().flatten() {
            ids.push(rel.asset.id.clone());
            ids.extend(rel.asset.relation_ids.iter().cloned());
        }
    }
    ids
}

pub fn ids(result: &DiscoverResult) -> Vec<&str> {
    result.results.iter().map(|h| h.asset.id.as_str()).collect()
}
