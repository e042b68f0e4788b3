//! The catalog of relations a source exposes, as filled from the database.
//!
//! The gateway loads it from `pg_class`/`pg_attribute` (or a fixture) and the
//! resolver treats it as the only truth: a name that is not here does not
//! exist. Lookups are by exact `(schema, name)` after identifier folding.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// The kind of a relation, as `pg_class.relkind` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationKind {
    Table,
    PartitionedTable,
    View,
    MaterializedView,
    ForeignTable,
    Sequence,
}

/// One column of a relation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogColumn {
    pub name: String,
    pub data_type: String,
}

/// One relation with its columns in `attnum` order (the order `*` expands to).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogRelation {
    pub schema: String,
    pub name: String,
    pub kind: RelationKind,
    pub columns: Vec<CatalogColumn>,
}

/// The schema the server always searches first for unqualified names.
pub const PG_CATALOG: &str = "pg_catalog";

/// All relations of a source plus the search path pinned on its connections.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "CatalogSpec", into = "CatalogSpec")]
pub struct Catalog {
    relations: Vec<CatalogRelation>,
    search_path: Vec<String>,
    index: HashMap<(String, String), usize>,
}

/// The serialized form of a [`Catalog`]: the index is rebuilt on load.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CatalogSpec {
    relations: Vec<CatalogRelation>,
    search_path: Vec<String>,
}

impl From<CatalogSpec> for Catalog {
    fn from(spec: CatalogSpec) -> Self {
        Catalog::new(spec.relations, spec.search_path)
    }
}

impl From<Catalog> for CatalogSpec {
    fn from(catalog: Catalog) -> Self {
        CatalogSpec {
            relations: catalog.relations,
            search_path: catalog.search_path,
        }
    }
}

impl Catalog {
    /// Builds a catalog. A later duplicate `(schema, name)` replaces an earlier one.
    /// `pg_temp*` entries in the search path are dropped: temporary objects are
    /// never governed resources.
    pub fn new(relations: Vec<CatalogRelation>, search_path: Vec<String>) -> Self {
        let mut index = HashMap::with_capacity(relations.len());
        for (i, rel) in relations.iter().enumerate() {
            index.insert((rel.schema.clone(), rel.name.clone()), i);
        }
        let search_path = search_path
            .into_iter()
            .filter(|s| !is_temp_schema(s))
            .collect();
        Catalog {
            relations,
            search_path,
            index,
        }
    }

    /// The relation with this exact schema and name.
    pub fn relation(&self, schema: &str, name: &str) -> Option<&CatalogRelation> {
        self.index
            .get(&(schema.to_string(), name.to_string()))
            .and_then(|&i| self.relations.get(i))
    }

    /// Resolves an unqualified name: `pg_catalog` first, then the search path.
    pub fn resolve_unqualified(&self, name: &str) -> Option<&CatalogRelation> {
        std::iter::once(PG_CATALOG)
            .chain(self.search_path.iter().map(String::as_str))
            .find_map(|schema| self.relation(schema, name))
    }

    /// Every relation, in load order.
    pub fn relations(&self) -> &[CatalogRelation] {
        &self.relations
    }

    /// The pinned search path (without the implicit `pg_catalog`).
    pub fn search_path(&self) -> &[String] {
        &self.search_path
    }
}

/// True for `pg_temp`, `pg_temp_N` and `pg_toast_temp_N`.
pub fn is_temp_schema(schema: &str) -> bool {
    schema.starts_with("pg_temp") || schema.starts_with("pg_toast_temp")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(schema: &str, name: &str) -> CatalogRelation {
        CatalogRelation {
            schema: schema.into(),
            name: name.into(),
            kind: RelationKind::Table,
            columns: vec![CatalogColumn {
                name: "id".into(),
                data_type: "integer".into(),
            }],
        }
    }

    #[test]
    fn unqualified_names_search_pg_catalog_first() {
        let cat = Catalog::new(
            vec![rel("app", "t"), rel("pg_catalog", "t"), rel("app", "u")],
            vec!["pg_temp".into(), "app".into()],
        );
        assert_eq!(
            cat.resolve_unqualified("t").map(|r| r.schema.as_str()),
            Some("pg_catalog")
        );
        assert_eq!(
            cat.resolve_unqualified("u").map(|r| r.schema.as_str()),
            Some("app")
        );
        assert!(cat.resolve_unqualified("x").is_none());
        assert_eq!(cat.search_path(), ["app".to_string()]);
    }

    #[test]
    fn catalog_round_trips_through_json() {
        let cat = Catalog::new(vec![rel("app", "t")], vec!["app".into()]);
        let json = serde_json::to_string(&cat).unwrap_or_default();
        let back: Option<Catalog> = serde_json::from_str(&json).ok();
        assert_eq!(back, Some(cat));
    }
}
