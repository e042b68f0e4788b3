//! Applying a decision's masks to a result, column by column, by lineage.

use crate::governance::{Allowed, OutputColumn};
use crate::sources::postgres::execute::{Rows, TextParam};

/// The parameters `allowed` runs with: the caller's, then those its masks at the scan bind.
pub fn params_to_run(
    allowed: &Allowed,
    mut params: Vec<TextParam>,
    mask_key: &[u8],
) -> Vec<TextParam> {
    if let Some(pads) = allowed.mask_params(mask_key) {
        params.extend(pads.map(|p| TextParam(Some(p))));
    }
    params
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the result has {got} columns but the decision expected {expected}; the source's catalog is out of date — refresh it and retry")]
pub struct WidthMismatch {
    pub expected: usize,
    pub got: usize,
}

/// Masks every value of each output column whose decision carries a mask. A result whose
/// width differs from the decision's is refused: masking by position would be unsafe. A
/// result without rows has nothing to mask (and its columns are not named).
pub fn apply_masks(
    rows: &mut Rows,
    output: &[OutputColumn],
    key: &[u8],
) -> Result<(), WidthMismatch> {
    if rows.rows.is_empty() {
        return Ok(());
    }
    if rows.columns.len() != output.len() {
        return Err(WidthMismatch {
            expected: output.len(),
            got: rows.columns.len(),
        });
    }
    let masked: Vec<(usize, &crate::governance::MaskStrategy)> = output
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.mask.as_ref().map(|m| (i, &m.strategy)))
        .collect();
    if masked.is_empty() {
        return Ok(());
    }
    for row in &mut rows.rows {
        for (i, strategy) in &masked {
            if let Some(v) = row.get_mut(*i) {
                *v = crate::governance::apply(strategy, v, key);
            }
        }
    }
    Ok(())
}

/// A write's `RETURNING` rows as JSON objects, masked by the decision's output columns:
/// `None` when the statement returns no columns, a `withheld` note when masking by position
/// would be unsafe.
pub fn returning_rows(
    mut rows: Rows,
    output: &[OutputColumn],
    key: &[u8],
) -> Option<serde_json::Value> {
    if rows.columns.is_empty() {
        return None;
    }
    Some(match apply_masks(&mut rows, output, key) {
        Ok(()) => serde_json::Value::Array(rows.into_objects()),
        Err(_) => serde_json::json!({"withheld": "RETURNING rows could not be masked safely"}),
    })
}
