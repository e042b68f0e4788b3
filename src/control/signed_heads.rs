//! Every stored signed checkpoint against the tree the log holds now: a checkpoint states
//! that the log held a tree of its size with its root, so a tree now smaller than the
//! newest checkpoint, or whose root at a checkpoint's size is another, is a break, whatever
//! the records and the chain say (they can be rewritten together by the database's owner).
//!
//! What this check cannot see, said plainly: an owner who also deletes the checkpoints
//! themselves leaves nothing here to compare with. Only a copy kept outside the control
//! database reveals that: the witness file (`audit verify --witness`), a timestamp
//! authority's receipts, an auditor's kept checkpoint (`audit prove --from/--to`, the
//! offline verifier).

use base64::Engine as _;
use serde::Serialize;

use super::{ledger, ControlError, ControlPool};
use crate::ledger::note::{self, CheckpointError};

/// What the comparison found.
#[derive(Debug, Clone, Serialize)]
pub struct SignedHeadsReport {
    pub ok: bool,
    /// Stored checkpoints compared with the tree.
    pub checked: u64,
    /// Of those, how many had their signature checked (the others are signed by a key
    /// other than the one given, or no key was given).
    pub signatures_checked: u64,
    /// The tree's size now.
    pub tree_size: u64,
    /// The first checkpoint that does not hold, with why.
    pub first_break: Option<HeadBreak>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HeadBreak {
    pub tree_size: i64,
    pub reason: String,
}

/// Checks every stored checkpoint: its note is signed by `verifier_key` (when it is that
/// key's) and states the row's size and root, the tree is at least that large, and the
/// tree's root at that size is the signed root.
pub async fn verify(
    pool: &ControlPool,
    verifier_key: Option<&str>,
) -> Result<SignedHeadsReport, ControlError> {
    let tree_size = ledger::tree_size(pool).await?;
    let mut report = SignedHeadsReport {
        ok: true,
        checked: 0,
        signatures_checked: 0,
        tree_size,
        first_break: None,
    };
    for stored in ledger::all(pool).await? {
        let reason = match check(pool, &stored, tree_size, verifier_key).await? {
            Checked::Held { signature } => {
                report.checked += 1;
                report.signatures_checked += u64::from(signature);
                continue;
            }
            Checked::Broken(reason) => reason,
        };
        report.ok = false;
        report.first_break = Some(HeadBreak {
            tree_size: stored.tree_size,
            reason,
        });
        break;
    }
    Ok(report)
}

enum Checked {
    Held { signature: bool },
    Broken(String),
}

async fn check(
    pool: &ControlPool,
    stored: &ledger::StoredCheckpoint,
    tree_size: u64,
    verifier_key: Option<&str>,
) -> Result<Checked, ControlError> {
    let size = stored.tree_size.unsigned_abs();
    let Ok(root) = base64::engine::general_purpose::STANDARD.decode(&stored.root_hash) else {
        return Ok(Checked::Broken("its root is not base64".into()));
    };
    let mut signature = false;
    if let Some(key) = verifier_key {
        match note::verify(&stored.note, key) {
            Ok(signed) => {
                if signed.size != size || signed.root.0.as_slice() != root.as_slice() {
                    return Ok(Checked::Broken(format!(
                        "its note is signed for {} records, not the {size} its row says",
                        signed.size
                    )));
                }
                signature = true;
            }
            // Signed by another key (an earlier one): its root is still compared below.
            Err(CheckpointError::NotSignedByKey(_)) => {}
            Err(e) => return Ok(Checked::Broken(format!("its note does not verify: {e}"))),
        }
    }
    if size > tree_size {
        return Ok(Checked::Broken(format!(
            "a checkpoint signed for {size} records, but the tree holds {tree_size}: records \
             the log had when it was signed were removed"
        )));
    }
    let now = ledger::root(pool, size).await?;
    if now.0.as_slice() != root.as_slice() {
        return Ok(Checked::Broken(format!(
            "the tree's root at {size} records is not the signed root: the log was rewritten \
             after it was checkpointed"
        )));
    }
    Ok(Checked::Held { signature })
}
