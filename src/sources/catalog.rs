//! Turning a stored catalog scan into the decision code's [`Catalog`].

use crate::control::catalog::StoredCatalog;
use crate::sql::{Catalog, CatalogColumn, CatalogRelation, RelationKind};

/// The catalog the decision code resolves names against, with the source's search path.
pub fn to_catalog(stored: &StoredCatalog, search_path: &[String]) -> Catalog {
    let relations = stored
        .relations
        .iter()
        .map(|r| CatalogRelation {
            schema: r.schema.clone(),
            name: r.name.clone(),
            kind: match r.kind {
                "table" => RelationKind::Table,
                "partitioned_table" => RelationKind::PartitionedTable,
                "view" => RelationKind::View,
                "materialized_view" => RelationKind::MaterializedView,
                "foreign_table" => RelationKind::ForeignTable,
                _ => RelationKind::Sequence,
            },
            columns: r
                .columns
                .iter()
                .map(|c| CatalogColumn {
                    name: c.name.clone(),
                    data_type: c.data_type.clone(),
                })
                .collect(),
        })
        .collect();
    Catalog::new(relations, search_path.to_vec())
}

/// Scans `source` with its read login, stores the scan and returns it as stored.
pub async fn refresh(
    control: &crate::control::ControlPool,
    source: &crate::control::sources::Source,
    max_relations: usize,
) -> Result<StoredCatalog, RefreshError> {
    let login = source.read_login.as_ref().ok_or_else(|| {
        RefreshError::Connect(crate::sources::postgres::ConnectError::NoLogin(
            source.id.clone(),
        ))
    })?;
    let client = crate::sources::postgres::connect_once(source, login)
        .await
        .map_err(RefreshError::Connect)?;
    let scan = crate::sources::postgres::catalog_scan::scan(&client, max_relations)
        .await
        .map_err(|e| {
            RefreshError::Scan(crate::sources::postgres::execute::db_error(e).to_string())
        })?;
    crate::control::catalog::store(control, &source.id, &scan).await?;
    sync_table_assets(control, &source.id, &scan).await;
    crate::control::catalog::load(control, &source.id)
        .await?
        .ok_or_else(|| RefreshError::Scan("the stored catalog vanished".into()))
}

#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    #[error("catalog scan could not connect: {0}")]
    Connect(crate::sources::postgres::ConnectError),
    #[error("catalog scan failed: {0}")]
    Scan(String),
    #[error(transparent)]
    Control(#[from] crate::control::ControlError),
}

/// One discovery asset per table or view, so agents can find tables by what they hold.
/// Failures are logged: discovery of tables must not block a catalog refresh.
async fn sync_table_assets(
    control: &crate::control::ControlPool,
    source_id: &str,
    scan: &crate::control::scanned::ScannedCatalog,
) {
    let inputs: Vec<crate::discovery::TableAssetInput> = scan
        .relations
        .iter()
        .filter(|r| r.kind != "sequence")
        .map(|r| crate::discovery::TableAssetInput {
            schema: r.schema.clone(),
            table: r.name.clone(),
            comment: r.comment.clone(),
            columns: r.columns.iter().map(|c| c.name.clone()).collect(),
        })
        .collect();
    let result = async {
        let client = control.get().await.map_err(|e| e.to_string())?;
        crate::discovery::sync_table_assets(&client, source_id, &inputs)
            .await
            .map_err(|e| e.to_string())
    }
    .await;
    if let Err(e) = result {
        tracing::warn!(source = %source_id, error = %e, "table assets could not be synchronized");
    }
}

impl RefreshError {
    /// The reason an agent is given when a source's catalog cannot be read.
    pub fn unavailable_reason(&self) -> &'static str {
        match self {
            RefreshError::Connect(
                crate::sources::postgres::ConnectError::TlsRefused
                | crate::sources::postgres::ConnectError::Tls(_),
            ) => "upstream TLS refused",
            _ => "source catalog unavailable: the source could not be scanned",
        }
    }
}
