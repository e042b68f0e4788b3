//! Who may see which asset. [`visible`] is the one rule; everything else (the SQL filter of
//! searches, related-document checks) is derived from it so the paths cannot drift.
//!
//! - A **document** with audience labels `L` is visible when some label `l` in `L` is allowed
//!   by `discover audience.<l>`; with no labels it is public and needs `discover
//!   audience.public`. A role `allow discover audience.*` + `deny discover audience.hr`
//!   therefore sees everything except documents meant for `hr` alone.
//! - A **table** asset is visible when the caller may `describe` that table.
//!
//! Decisions go through the gateway's access evaluator, so policy denies apply as well.

use tokio_postgres::types::ToSql;

use super::asset::{table_of_asset_id, SOURCE_TYPE_TABLE};
use super::error::DiscoveryError;
use crate::governance::{
    is_allowed, AccessProfile, AccessRequest, Action, Effect, ResourcePattern,
};

/// Pseudo-schema of audience resources: `discover audience.<label>`.
pub const AUDIENCE_SCHEMA: &str = "audience";
/// Resource name that admits documents without audience labels.
pub const PUBLIC_AUDIENCE: &str = "public";

/// What the visibility rule reads of an asset.
#[derive(Debug, Clone, Copy)]
pub struct AssetRef<'a> {
    pub source_type: &'a str,
    pub id: &'a str,
    pub audiences: &'a [String],
}

/// True when the caller may see the asset. See the module docs.
pub fn visible(profile: &AccessProfile, asset: &AssetRef<'_>) -> bool {
    if asset.source_type == SOURCE_TYPE_TABLE {
        return table_of_asset_id(asset.id).is_some_and(|(schema, table)| {
            is_allowed(
                profile,
                &AccessRequest {
                    action: Action::Describe,
                    schema: &schema,
                    table: &table,
                    column: None,
                },
            )
        });
    }
    if asset.audiences.is_empty() {
        return audience_allowed(profile, PUBLIC_AUDIENCE);
    }
    asset.audiences.iter().any(|l| audience_allowed(profile, l))
}

fn audience_allowed(profile: &AccessProfile, label: &str) -> bool {
    is_allowed(
        profile,
        &AccessRequest {
            action: Action::Discover,
            schema: AUDIENCE_SCHEMA,
            table: label,
            column: None,
        },
    )
}

/// True when the caller holds `discover` on the source at all, i.e. at least one
/// `audience.*` resource is allowed. Each allow statement that could cover an audience names
/// a candidate (its label, or for `*` / `audience.*` a label no statement names), and the
/// candidate is put to the evaluator, so denies and policies are honoured.
pub fn may_discover(profile: &AccessProfile) -> bool {
    let statements = || {
        profile
            .roles
            .iter()
            .flat_map(|r| r.statements.iter())
            .filter(|s| s.action == Action::Discover)
    };
    let named: Vec<&str> = statements()
        .filter_map(|s| match &s.resource {
            ResourcePattern::Table(schema, t) | ResourcePattern::Column(schema, t, _)
                if schema == AUDIENCE_SCHEMA =>
            {
                Some(t.as_str())
            }
            _ => None,
        })
        .collect();
    // Labels with control characters are refused at ingestion, so the probe never names a
    // real audience; the loop only guards against a pattern spelling it out.
    let mut probe = String::from("\u{1}unnamed");
    while named.contains(&probe.as_str()) {
        probe.push('\u{1}');
    }
    statements()
        .filter(|s| s.effect == Effect::Allow)
        .filter_map(|s| match &s.resource {
            ResourcePattern::Any => Some(probe.as_str()),
            ResourcePattern::Schema(schema) if schema == AUDIENCE_SCHEMA => Some(probe.as_str()),
            ResourcePattern::Table(schema, t) if schema == AUDIENCE_SCHEMA => Some(t.as_str()),
            _ => None,
        })
        .any(|label| audience_allowed(profile, label))
}

/// The visibility rule evaluated against the labels and tables present in one source, in a
/// form SQL can apply before any limit. Anything added to the source after it was computed
/// is hidden (fail closed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VisibleScope {
    /// Audience labels that admit a document.
    pub labels: Vec<String>,
    /// Whether unlabelled documents are visible.
    pub public: bool,
    /// Ids of visible table assets.
    pub tables: Vec<String>,
}

impl VisibleScope {
    /// Evaluates [`visible`] for every distinct audience label and every table asset of
    /// `source_id`. A document is visible iff one of its labels is, so per-label answers
    /// decide every labelled document exactly as [`visible`] would.
    pub async fn load(
        client: &impl deadpool_postgres::GenericClient,
        source_id: &str,
        profile: &AccessProfile,
    ) -> Result<Self, DiscoveryError> {
        let rows = client
            .query(
                "SELECT DISTINCT unnest(audiences) FROM discovery_assets
                  WHERE source_id = $1 AND source_type <> 'table'",
                &[&source_id],
            )
            .await?;
        let mut labels: Vec<String> = rows
            .iter()
            .map(|r| r.get::<_, String>(0))
            .filter(|l| visible(profile, &document(std::slice::from_ref(l))))
            .collect();
        labels.sort();
        let rows = client
            .query(
                "SELECT id FROM discovery_assets WHERE source_id = $1 AND source_type = 'table'",
                &[&source_id],
            )
            .await?;
        let tables = rows
            .iter()
            .map(|r| r.get::<_, String>(0))
            .filter(|id| {
                let asset = AssetRef {
                    source_type: SOURCE_TYPE_TABLE,
                    id,
                    audiences: &[],
                };
                visible(profile, &asset)
            })
            .collect();
        Ok(VisibleScope {
            labels,
            public: visible(profile, &document(&[])),
            tables,
        })
    }

    /// SQL condition on the asset row aliased `alias`, with this scope bound as three
    /// parameters starting at `$first` (labels, public, tables).
    pub fn sql(alias: &str, first: usize) -> String {
        let (labels, public, tables) = (first, first + 1, first + 2);
        format!(
            "(({alias}.source_type = 'table' AND {alias}.id = ANY(${tables}::text[])) OR \
              ({alias}.source_type <> 'table' AND ({alias}.audiences && ${labels}::text[] OR \
               (cardinality({alias}.audiences) = 0 AND ${public}::boolean))))"
        )
    }

    /// The three parameters of [`VisibleScope::sql`], in order.
    pub fn params(&self) -> [&(dyn ToSql + Sync); 3] {
        [&self.labels, &self.public, &self.tables]
    }
}

fn document(audiences: &[String]) -> AssetRef<'_> {
    AssetRef {
        source_type: "document",
        id: "",
        audiences,
    }
}
