//! Masks at the scan: for a read of a masked column (masked for this caller), the
//! statement that runs reads the column's relation through a derived table whose masked
//! columns already hold the masked value. Whatever the rest of the statement
//! does with such a column — filter, sort, group, join, window, compare with a probe row,
//! aggregate, in any spelling PostgreSQL accepts — it only ever sees the masked value, so a
//! disagreement between the resolver and PostgreSQL about what a name or an ordinal means
//! can no longer reach a raw value. The resolver still refuses a misuse with its reason,
//! and the executor still masks the output by lineage: two walls.
//!
//! Each strategy in SQL, with the same result the output mask gives (so the second wall
//! changes nothing): `null` is a NULL of the column's type, `redact` the constant, `partial`
//! the stars and the kept tail of the value's text, `hash` the keyed HMAC-SHA256 of the
//! value's text, computed by PostgreSQL from the key's inner and outer pads, which are
//! bound as two parameters after the caller's own (never written into the text, so they
//! reach neither the statement logs nor `pg_stat_activity`). A NULL stays NULL.
//!
//! A relation is read through its derived table when the statement reads any of its masked
//! columns at all (a use of any kind, an output, `*`, a whole row): which columns a statement
//! reads is the reading grants rest on, checked against PostgreSQL's own column privileges;
//! how it uses them — the reading each review found a new way to get wrong — no longer
//! decides what PostgreSQL hands the statement.
//!
//! Writes are not rewritten (their target cannot be a derived table): a write is shown to
//! an approver before it runs, and its uses of masked columns are held by the resolver.

use crate::governance::access::{AccessProfile, PolicyRule, ResourcePattern};
use crate::governance::redaction::{MaskStrategy, RedactionRule, HASH_PREFIX, REDACTED};
use crate::governance::verdict::{MaskedStatement, Refusal, Step};
use crate::sql::catalog::{Catalog, CatalogRelation};
use crate::sql::lineage::Analysis;
use crate::sql::scan_mask::NamedAt;

/// A mask rule of a policy, with the pattern of columns it covers.
pub(crate) struct MaskRule<'a> {
    pub resource: &'a ResourcePattern,
    pub strategy: &'a MaskStrategy,
    pub allow_filter: bool,
}

/// The profile's mask rules that apply to every call.
pub(crate) fn mask_rules(profile: &AccessProfile) -> Vec<MaskRule<'_>> {
    profile
        .policies
        .iter()
        .flat_map(|p| &p.rules)
        .filter(|r| r.always_applies())
        .filter_map(|r| match &r.effect {
            PolicyRule::Mask {
                resource,
                strategy,
                allow_filter,
            } => Some(MaskRule {
                resource,
                strategy,
                allow_filter: *allow_filter,
            }),
            _ => None,
        })
        .collect()
}

/// The strictest mask on one column: the profile's redactions and its mask rules.
fn column_mask<'a>(
    redactions: &'a [RedactionRule],
    rules: &'a [MaskRule<'a>],
    schema: &str,
    table: &str,
    column: &str,
) -> Option<&'a MaskStrategy> {
    redactions
        .iter()
        .filter(|r| r.schema == schema && r.table == table && r.column == column)
        .map(|r| &r.strategy)
        .chain(
            rules
                .iter()
                .filter(|r| r.resource.covers_column(schema, table, column))
                .map(|r| r.strategy),
        )
        .max_by_key(|s| s.strictness())
}

/// `statement` with every relation of `analysis`'s scans that carries a mask for `profile`
/// read through a derived table of masked values; `None` when no scanned relation carries
/// one. `param_count` is the number of the caller's parameters; `named`, where the text's
/// FROM items name their relations (`sql::scan_mask::named_items`), when known. Refuses
/// when a masked relation's scan cannot be placed.
pub fn scan_masked(
    statement: &str,
    analysis: &Analysis,
    catalog: &Catalog,
    profile: &AccessProfile,
    param_count: usize,
    named: Option<&[NamedAt]>,
) -> Result<Option<MaskedStatement>, Refusal> {
    let rules = mask_rules(profile);
    if rules.is_empty() && profile.redactions.is_empty() {
        return Ok(None);
    }
    let key = param_count + 1;
    let mut wanted: Vec<(usize, &CatalogRelation, Vec<Option<&MaskStrategy>>)> = Vec::new();
    for scan in &analysis.scans {
        let r = &scan.relation;
        let Some(relation) = catalog.relation(&r.schema, &r.name) else {
            return Err(unplaceable(&format!("{r} is not in the catalog")));
        };
        let masks: Vec<Option<&MaskStrategy>> = relation
            .columns
            .iter()
            .map(|c| column_mask(&profile.redactions, &rules, &r.schema, &r.name, &c.name))
            .collect();
        if masks.iter().all(Option::is_none) {
            continue;
        }
        // A relation none of whose masked columns the statement reads in any way (used,
        // returned, in `*` or a whole row) runs as it is: its masked values cannot reach
        // the answer. Which columns a statement reads is what grants rest on, and PostgreSQL's
        // column privileges check it (`tests/resolver_differential.rs`, `a-privileges`);
        // how it uses them, the reading reviews kept finding wrong, no longer matters.
        let reads_masked = relation
            .columns
            .iter()
            .zip(&masks)
            .any(|(c, m)| m.is_some() && reads_column(analysis, &r.schema, &r.name, &c.name));
        if !reads_masked {
            continue;
        }
        let Some(position) = scan.position else {
            return Err(unplaceable(&format!("a read of {r} could not be placed")));
        };
        wanted.push((position, relation, masks));
    }
    if wanted.is_empty() {
        return Ok(None);
    }
    let hashes = wanted
        .iter()
        .flat_map(|(_, _, m)| m)
        .any(|m| matches!(m, Some(MaskStrategy::Hash)));
    // Where the text says where each name stands (the memo's, or the parse's), the names
    // are cut out of it; otherwise the statement is parsed again and its tree rewritten.
    let cut = named.and_then(|named| {
        let queries: Vec<(usize, String)> = wanted
            .iter()
            .map(|(p, relation, masks)| (*p, relation_query(relation, masks, false, key)))
            .collect();
        crate::sql::scan_mask::splice(statement, named, &queries)
    });
    let text = match cut {
        Some(text) => text,
        None => {
            let positions: Vec<usize> = wanted.iter().map(|(p, _, _)| *p).collect();
            let derived = |position: usize, only: bool| {
                wanted
                    .iter()
                    .find(|(p, _, _)| *p == position)
                    .map(|(_, relation, masks)| relation_query(relation, masks, only, key))
            };
            crate::sql::scan_mask::read_through(statement, derived, &positions)
                .map_err(|e| unplaceable(&e.to_string()))?
        }
    };
    Ok(Some(MaskedStatement {
        text,
        key_params: hashes.then_some(key),
    }))
}

/// Whether the statement reads the column in any way: a use of any kind, or an output
/// derived from it.
fn reads_column(analysis: &Analysis, schema: &str, table: &str, column: &str) -> bool {
    let is = |c: &crate::sql::lineage::ColumnRef| {
        c.schema == schema && c.table == table && c.column == column
    };
    analysis.uses.keys().any(is)
        || analysis
            .outputs
            .iter()
            .any(|o| o.lineage.sources.iter().any(is))
}

fn unplaceable(why: &str) -> Refusal {
    Refusal {
        status: 400,
        step: Step::Redaction,
        code: "mask_not_placeable",
        rule: "redaction (masks at the scan)".to_string(),
        reason: format!(
            "This statement reads a relation with masked columns in a way the gateway cannot \
             put its masks on ({why}); read the relation by name in FROM, or leave out the \
             masked relation."
        ),
    }
}

/// `SELECT <each column, masked where it has a mask> FROM [ONLY] "schema"."name"`.
fn relation_query(
    relation: &CatalogRelation,
    masks: &[Option<&MaskStrategy>],
    only: bool,
    key: usize,
) -> String {
    let columns: Vec<String> = relation
        .columns
        .iter()
        .zip(masks)
        .map(|(c, mask)| {
            let name = quoted(&c.name);
            match mask {
                None => name,
                Some(strategy) => format!("{} AS {name}", expression(strategy, &name, key)),
            }
        })
        .collect();
    format!(
        "SELECT {} FROM {}{}.{}",
        columns.join(", "),
        if only { "ONLY " } else { "" },
        quoted(&relation.schema),
        quoted(&relation.name)
    )
}

/// An identifier, always quoted (a column may be named like a keyword).
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The mask of `column` in SQL; `key` numbers the hash's pad parameters.
fn expression(strategy: &MaskStrategy, column: &str, key: usize) -> String {
    match strategy {
        MaskStrategy::Null => format!("CASE WHEN false THEN {column} END"),
        MaskStrategy::Redact => {
            format!("CASE WHEN {column} IS NULL THEN NULL ELSE '{REDACTED}' END")
        }
        // The kept tail padded on the left with stars to the value's length; a value no
        // longer than the tail is all stars. NULL stays NULL (char_length of NULL is NULL).
        MaskStrategy::Partial { keep_last } => {
            let text = format!("({column})::text");
            format!(
                "lpad(CASE WHEN char_length({text}) <= {keep_last} THEN '' \
                 ELSE right({text}, {keep_last}) END, char_length({text}), '*')"
            )
        }
        MaskStrategy::Hash => format!(
            "CASE WHEN {column} IS NULL THEN NULL ELSE '{HASH_PREFIX}' || encode(sha256(${outer}::bytea || \
             sha256(${key}::bytea || convert_to(({column})::text, 'UTF8'))), 'hex') END",
            outer = key + 1
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::catalog::{CatalogColumn, RelationKind};

    #[test]
    fn relation_query_masks_only_masked_columns() {
        let relation = CatalogRelation {
            schema: "public".into(),
            name: "customers".into(),
            kind: RelationKind::Table,
            columns: ["id", "email", "select"]
                .iter()
                .map(|n| CatalogColumn {
                    name: (*n).into(),
                    data_type: "text".into(),
                })
                .collect(),
        };
        let redact = MaskStrategy::Redact;
        let null = MaskStrategy::Null;
        let got = relation_query(&relation, &[None, Some(&redact), Some(&null)], true, 3);
        assert_eq!(
            got,
            "SELECT \"id\", CASE WHEN \"email\" IS NULL THEN NULL ELSE '[REDACTED]' END AS \"email\", \
             CASE WHEN false THEN \"select\" END AS \"select\" FROM ONLY \"public\".\"customers\""
        );
        let hash = expression(&MaskStrategy::Hash, "\"e\"", 3);
        assert!(
            hash.contains("$4::bytea") && hash.contains("$3::bytea"),
            "{hash}"
        );
    }
}
