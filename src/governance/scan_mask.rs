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

use crate::governance::access::AccessProfile;
use crate::governance::redaction::{MaskStrategy, HASH_PREFIX, REDACTED};
use crate::governance::verdict::{MaskedStatement, Refusal, Step};
use crate::sql::catalog::{Catalog, CatalogRelation};
use crate::sql::lineage::Analysis;
use crate::sql::scan_mask::{named_in, splice, NamedAt};

/// `statement` with every relation of `analysis`'s scans whose masked columns (`profile`'s
/// redactions, the decision's mask rules merged in) it reads read through a derived table
/// of masked values; `None` when there is none. `param_count` is the number of the caller's parameters; `named`, where the text's
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
    if profile.redactions.is_empty() {
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
            .map(|c| {
                profile
                    .redactions
                    .iter()
                    .find(|m| m.schema == r.schema && m.table == r.name && m.column == c.name)
                    .map(|m| &m.strategy)
            })
            .collect();
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
        // The resolver may walk one item more than once (a recursive CTE's body).
        if wanted.iter().any(|(p, _, _)| *p == position) {
            continue;
        }
        wanted.push((position, relation, masks));
    }
    if wanted.is_empty() {
        return Ok(None);
    }
    let hashes = wanted
        .iter()
        .flat_map(|(_, _, m)| m)
        .any(|m| matches!(m, Some(MaskStrategy::Hash)));
    // Where each name stands: the memo's or the parse's record, else the text parsed again.
    let parsed;
    let named = match named {
        Some(named) => named,
        None => {
            parsed = named_in(statement).map_err(|e| unplaceable(&e.to_string()))?;
            &parsed
        }
    };
    let mut queries = Vec::with_capacity(wanted.len());
    for (position, relation, masks) in &wanted {
        let Some(at) = named.iter().find(|n| n.position == *position) else {
            return Err(unplaceable(&format!(
                "the read of {}.{} is not a plain name in FROM",
                relation.schema, relation.name
            )));
        };
        queries.push((*position, relation_query(relation, masks, at.only, key)));
    }
    let text = splice(statement, named, &queries)
        .ok_or_else(|| unplaceable("two reads overlap in the text"))?;
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
