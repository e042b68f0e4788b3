//! The live records against the tree's leaves: every record the stored tree covers must be
//! the one its leaf was made from. With the signed checkpoints (whose roots are computed
//! from the stored tree) this ties the records themselves to the signatures: a log whose
//! records and chain were rewritten but whose tree was left alone fails here.

use futures_util::TryStreamExt;
use serde::Serialize;

use super::{ledger, ControlError, ControlPool};
use crate::ledger::tree;

/// Records compared per round trip for their leaves.
const BATCH: usize = 2_000;

/// What the comparison found.
#[derive(Debug, Clone, Serialize)]
pub struct LeafReport {
    pub ok: bool,
    /// Live records compared (those the tree covers).
    pub checked: u64,
    /// How many records the tree covers.
    pub tree_size: u64,
    /// The first record whose chain hash is not its leaf's.
    pub first_mismatch: Option<i64>,
}

pub async fn verify(pool: &ControlPool) -> Result<LeafReport, ControlError> {
    let size = ledger::tree_size(pool).await?;
    let covered = i64::try_from(size).map_err(|e| ControlError::Invalid(e.to_string()))?;
    let records = pool.get().await?;
    let hashes = pool.get().await?;
    let stream = records
        .query_raw(
            "SELECT seq, hash FROM audit_records WHERE seq <= $1 ORDER BY seq",
            [&covered],
        )
        .await?;
    futures_util::pin_mut!(stream);
    let mut checked = 0;
    let mut batch: Vec<(i64, Vec<u8>)> = Vec::with_capacity(BATCH);
    let mut done = false;
    while !done {
        match stream.try_next().await? {
            Some(row) => batch.push((row.get(0), row.get(1))),
            None => done = true,
        }
        if batch.len() < BATCH && !done {
            continue;
        }
        let indexes: Vec<u64> = batch
            .iter()
            .map(|(seq, _)| tree::leaf_index(seq.unsigned_abs() - 1))
            .collect();
        let known = ledger::fetch(&hashes, &indexes).await?;
        for ((seq, hash), index) in batch.drain(..).zip(&indexes) {
            if known.get(index) != Some(&tree::leaf(&hash)) {
                return Ok(LeafReport {
                    ok: false,
                    checked,
                    tree_size: size,
                    first_mismatch: Some(seq),
                });
            }
            checked += 1;
        }
    }
    Ok(LeafReport {
        ok: true,
        checked,
        tree_size: size,
        first_mismatch: None,
    })
}
