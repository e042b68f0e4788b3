//! Applying a decision's masks to a result, column by column, by lineage.

use crate::governance::OutputColumn;
use crate::sources::postgres::execute::Rows;

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
