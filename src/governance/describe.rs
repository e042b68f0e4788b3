//! "Describe access": what a profile may read on a source, from the same
//! evaluator that authorizes queries, so the answer can never disagree with
//! a decision.

use serde::Serialize;

use crate::governance::access::{is_allowed, AccessProfile, AccessRequest, Action};
use crate::governance::redaction::{rule_for, MaskStrategy};
use crate::sql::catalog::{Catalog, RelationKind};
use crate::sql::lineage::{ColumnRef, RelationRef};

/// A readable column, with its mask if it is returned masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadableColumn {
    pub name: String,
    pub data_type: String,
    pub mask: Option<MaskStrategy>,
}

/// A relation with at least one readable column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReadableRelation {
    pub relation: RelationRef,
    pub kind: RelationKind,
    /// Readable columns, in catalog order.
    pub columns: Vec<ReadableColumn>,
    /// True when every column is readable, so `SELECT *` is allowed.
    pub all_columns: bool,
}

/// Lists every relation of `catalog` the profile may read, in catalog order.
pub fn readable_columns(profile: &AccessProfile, catalog: &Catalog) -> Vec<ReadableRelation> {
    let mut out = Vec::new();
    for relation in catalog.relations() {
        let table_request = AccessRequest {
            action: Action::Read,
            schema: &relation.schema,
            table: &relation.name,
            column: None,
        };
        if !is_allowed(profile, &table_request) {
            continue;
        }
        let columns: Vec<ReadableColumn> = relation
            .columns
            .iter()
            .filter(|c| {
                is_allowed(
                    profile,
                    &AccessRequest {
                        column: Some(&c.name),
                        ..table_request
                    },
                )
            })
            .map(|c| ReadableColumn {
                name: c.name.clone(),
                data_type: c.data_type.clone(),
                mask: rule_for(
                    &profile.redactions,
                    &ColumnRef::new(&relation.schema, &relation.name, &c.name),
                )
                .map(|r| r.strategy.clone()),
            })
            .collect();
        if columns.is_empty() {
            continue;
        }
        out.push(ReadableRelation {
            relation: RelationRef {
                schema: relation.schema.clone(),
                name: relation.name.clone(),
            },
            kind: relation.kind,
            all_columns: columns.len() == relation.columns.len(),
            columns,
        });
    }
    out
}
