//! The demo behind `interlock dev`: the `shop` database, its least-privilege logins, the
//! source registration, the demo identities' access and fresh demo keys.
//!
//! Everything except creating the databases goes through the operator code paths
//! (`control::sources::add_source`, `control::policy_file::apply`, `control::keys`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::control::{keys, policy_file, sources, ControlError, ControlPool};
use crate::pgcluster::Cluster;

pub const SHOP_SQL: &str = include_str!("../../config/demo/shop.sql");
/// Row-level security on the caller's identity (`public.agent_notes`), for the demo only.
pub const IDENTITY_SQL: &str = include_str!("../../config/demo/identity.sql");
pub const ACCESS_TOML: &str = include_str!("../../config/demo/access.toml");
/// The demo handbook, read from the source tree (the demo runs from a checkout).
pub const HANDBOOK_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/config/demo/handbook");
pub const HANDBOOK: &str = "handbook";
pub const CONTROL_DB: &str = "interlock";
pub const SHOP_DB: &str = "shop";
pub const DEMO_KEY_LABEL: &str = "demo";

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("demo database setup: {0}")]
    Db(#[from] tokio_postgres::Error),
    #[error("demo setup: {0}")]
    Control(#[from] ControlError),
    #[error("demo setup: {0}: {1}")]
    Io(String, std::io::Error),
    #[error("demo handbook: {0}")]
    Handbook(String),
}

/// The keys minted for this run.
#[derive(Debug, Clone, Serialize)]
pub struct DemoKeys {
    pub agent_key: String,
    pub approver_key: String,
    pub operator_key: String,
}

/// Creates the control and `shop` databases when missing, loading the demo data and the
/// `shop_reader` (SELECT only) and `shop_writer` logins into a new `shop`.
pub async fn prepare_databases(cluster: &Cluster) -> Result<(), DemoError> {
    let admin = cluster.connect("postgres").await?;
    for db in [CONTROL_DB, SHOP_DB] {
        let exists = admin
            .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&db])
            .await?
            .is_some();
        if !exists {
            admin
                .batch_execute(&format!("CREATE DATABASE \"{db}\""))
                .await?;
            if db == SHOP_DB {
                load_shop(cluster).await?;
            }
        }
    }
    cluster
        .connect(SHOP_DB)
        .await?
        .batch_execute(IDENTITY_SQL)
        .await?;
    Ok(())
}

async fn load_shop(cluster: &Cluster) -> Result<(), DemoError> {
    let shop = cluster.connect(SHOP_DB).await?;
    shop.batch_execute(SHOP_SQL).await?;
    for (role, grants) in [
        (
            "shop_reader",
            "GRANT USAGE ON SCHEMA public, hr TO shop_reader;
             GRANT SELECT ON ALL TABLES IN SCHEMA public, hr TO shop_reader;",
        ),
        (
            "shop_writer",
            "GRANT USAGE ON SCHEMA public TO shop_writer;
             GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO shop_writer;",
        ),
    ] {
        let password = keys::random_token(24);
        let file = password_file(cluster.base_dir(), role);
        crate::secrets::write_private(&file, &password)
            .map_err(|e| DemoError::Io(file.display().to_string(), e))?;
        let exists = shop
            .query_opt("SELECT 1 FROM pg_roles WHERE rolname = $1", &[&role])
            .await?
            .is_some();
        let verb = if exists { "ALTER" } else { "CREATE" };
        shop.batch_execute(&format!(
            "{verb} ROLE {role} LOGIN PASSWORD '{password}'; {grants}"
        ))
        .await?;
    }
    Ok(())
}

/// Where the demo keeps the password of a database login.
pub fn password_file(base_dir: &Path, role: &str) -> PathBuf {
    base_dir.join(format!("{role}.password"))
}

/// Registers `shop` (if absent), applies the demo access file and mints fresh demo keys,
/// revoking the keys of earlier runs.
pub async fn seed(pool: &ControlPool, cluster: &Cluster) -> Result<DemoKeys, DemoError> {
    let registered = sources::list_sources(pool)
        .await?
        .iter()
        .any(|s| s.id == SHOP_DB);
    if !registered {
        let file = |role: &str| {
            Some(
                password_file(cluster.base_dir(), role)
                    .to_string_lossy()
                    .into_owned(),
            )
        };
        sources::add_source(
            pool,
            &sources::NewSource {
                id: SHOP_DB.into(),
                description: "Demo web shop: customers, orders, products (and an HR table)".into(),
                host: Some("127.0.0.1".into()),
                port: Some(cluster.port()),
                dbname: Some(SHOP_DB.into()),
                user: Some("shop_reader".into()),
                password_file: file("shop_reader"),
                write_user: Some("shop_writer".into()),
                write_password_file: file("shop_writer"),
                search_path: Some(vec!["public".into()]),
                cache_ttl_ms: Some(5_000),
                // The demo shows approvers what a write will do by running it rolled back.
                approval_preview: Some(sources::PreviewMode::DryRun),
                ..Default::default()
            },
        )
        .await?;
    } else {
        update_port(pool, cluster.port()).await?;
    }
    // public.agent_notes shows each caller only its own notes (also on a data directory
    // from before the demo carried identities).
    sources::update_source(
        pool,
        SHOP_DB,
        &sources::SourceChanges {
            identity_propagation: Some(sources::Propagation::Settings),
            ..Default::default()
        },
    )
    .await?;
    register_handbook(pool).await?;
    policy_file::apply(pool, &policy_file::AccessFile::parse(ACCESS_TOML)?).await?;
    for k in keys::list_keys(pool, None).await? {
        if k.label == DEMO_KEY_LABEL && k.revoked_at.is_none() {
            keys::revoke_key(pool, &k.prefix).await?;
        }
    }
    Ok(DemoKeys {
        agent_key: keys::create_key(pool, "demo-agent", DEMO_KEY_LABEL)
            .await?
            .key,
        approver_key: keys::create_key(pool, "demo-approver", DEMO_KEY_LABEL)
            .await?
            .key,
        operator_key: keys::create_key(pool, "demo-operator", DEMO_KEY_LABEL)
            .await?
            .key,
    })
}

/// Registers the document source `handbook` (if absent) and (re)loads its documents from
/// [`HANDBOOK_DIR`], through the same ingestion code as the admin API.
pub async fn register_handbook(pool: &ControlPool) -> Result<usize, DemoError> {
    let registered = sources::list_sources(pool)
        .await?
        .iter()
        .any(|s| s.id == HANDBOOK);
    if !registered {
        sources::add_source(
            pool,
            &sources::NewSource {
                id: HANDBOOK.into(),
                kind: Some(sources::SourceKind::Documents),
                description: "Northwind Outfitters company handbook".into(),
                ..Default::default()
            },
        )
        .await?;
    }
    let assets = crate::discovery::load_directory(std::path::Path::new(HANDBOOK_DIR))
        .map_err(|e| DemoError::Handbook(e.to_string()))?;
    let mut client = pool.get().await.map_err(ControlError::from)?;
    let tx = client.transaction().await?;
    let n = crate::discovery::replace_documents(&tx, HANDBOOK, &assets)
        .await
        .map_err(|e| DemoError::Handbook(e.to_string()))?;
    tx.commit().await?;
    Ok(n)
}

/// The private cluster may come up on another port than last time.
async fn update_port(pool: &ControlPool, port: u16) -> Result<(), ControlError> {
    let client = pool.get().await?;
    client
        .execute(
            "UPDATE sources SET port = $2, updated_at = now() WHERE id = $1",
            &[&SHOP_DB, &i32::from(port)],
        )
        .await?;
    Ok(())
}

/// Control-database settings pointing at the demo cluster, password by reference.
pub fn control_settings(settings: &mut crate::Settings, cluster: &Cluster) {
    settings.control.host = "127.0.0.1".into();
    settings.control.port = cluster.port();
    settings.control.dbname = CONTROL_DB.into();
    settings.control.user = crate::pgcluster::SUPERUSER.into();
    settings.control.password_env = String::new();
    settings.control.password_file = cluster.password_file().to_string_lossy().into_owned();
}
