//! The audit log's Merkle tree and signed checkpoints in the control database
//! (migration 0013; the tree itself is `crate::ledger`).
//!
//! The tree's stored hashes are appended by whoever makes a checkpoint, under one
//! advisory lock, in batches read from `audit_records` in `seq` order: never on a
//! governed call's path, and never ahead of a record that is not committed.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use serde::Serialize;

use interlock_actors::audit::record::{void_hash, GENESIS};
use interlock_actors::audit::AuditRecord;

use super::{ControlError, ControlPool};
use crate::ledger::proof::{
    self, ConsistencyBundle, InclusionBundle, CONSISTENCY_FORMAT, INCLUSION_FORMAT,
};
use crate::ledger::tree::{self, Hash, Known};
use crate::ledger::{CheckpointKey, SignedCheckpoint};

/// Arbitrary constant naming the tree's lock ("ILLEDGER").
const LEDGER_LOCK: i64 = 0x494c_4c45_4447_4552;

/// Records added to the tree per transaction.
const BATCH: i64 = 5_000;

/// One stored checkpoint.
#[derive(Debug, Clone, Serialize)]
pub struct StoredCheckpoint {
    pub tree_size: i64,
    /// Base64, as in the note.
    pub root_hash: String,
    pub key_name: String,
    pub note: String,
    pub created_at: DateTime<Utc>,
    /// Base64 of the RFC 3161 response over the note, once a timestamp authority gave one.
    pub timestamp: Option<String>,
    /// The time the authority vouches for.
    pub timestamped_at: Option<DateTime<Utc>>,
    /// Why the last attempt to get a timestamp failed (it is retried).
    pub timestamp_error: Option<String>,
}

fn invalid(e: impl std::fmt::Display) -> ControlError {
    ControlError::Invalid(e.to_string())
}

/// The stored hashes with these indexes.
pub(super) async fn fetch(
    client: &impl GenericClient,
    indexes: &[u64],
) -> Result<Known, ControlError> {
    if indexes.is_empty() {
        return Ok(Known::new());
    }
    let wanted: Vec<i64> = indexes
        .iter()
        .map(|i| i64::try_from(*i).map_err(invalid))
        .collect::<Result<_, _>>()?;
    let rows = client
        .query(
            "SELECT idx, hash FROM audit_tree_hashes WHERE idx = ANY($1)",
            &[&wanted],
        )
        .await?;
    let mut known = HashMap::with_capacity(rows.len());
    for r in rows {
        let idx: i64 = r.get(0);
        let bytes: Vec<u8> = r.get(1);
        let hash: [u8; 32] = bytes
            .try_into()
            .map_err(|_| invalid(format!("stored tree hash {idx} is not 32 bytes")))?;
        known.insert(idx.unsigned_abs(), Hash(hash));
    }
    if let Some(missing) = indexes.iter().find(|i| !known.contains_key(i)) {
        return Err(invalid(format!(
            "the audit tree's stored hash {missing} is missing"
        )));
    }
    Ok(known)
}

/// How many records the stored tree covers.
pub async fn tree_size(pool: &ControlPool) -> Result<u64, ControlError> {
    let client = pool.get().await?;
    let size: i64 = client
        .query_one("SELECT size FROM audit_tree", &[])
        .await?
        .get(0);
    Ok(size.unsigned_abs())
}

/// How long a seq stays missing before it is voided. Any wait would be safe (the primary
/// key decides between a void and a batch that still holds the seq, which then takes new
/// seqs); this one spares a batch that is merely slow that retry.
const HOLE_GRACE_SECS: f64 = 2.0;

/// Adds every committed record not yet in the tree, up to the first seq that is missing;
/// returns the tree's size. A missing seq is noted in `audit_holes`, and once it has been
/// missing for [`HOLE_GRACE_SECS`] it is filled with a void record, so the tree goes on.
pub async fn extend(pool: &ControlPool) -> Result<u64, ControlError> {
    loop {
        let mut client = pool.get().await?;
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LEDGER_LOCK])
            .await?;
        let size: i64 = tx
            .query_one("SELECT size FROM audit_tree", &[])
            .await?
            .get(0);
        // A tree smaller than a signed checkpoint was cut back: growing it again would
        // void the missing seqs and sign the rewritten log. Refuse; `audit verify` says so.
        let signed: i64 = tx
            .query_one(
                "SELECT coalesce(max(tree_size), 0) FROM audit_checkpoints",
                &[],
            )
            .await?
            .get(0);
        if size < signed {
            return Err(invalid(format!(
                "the audit tree holds {size} records but a signed checkpoint covers {signed}: \
                 the log was cut back after it was signed; it is not extended, voided or signed \
                 again (run `interlock audit verify`)"
            )));
        }
        let rows = tx
            .query(
                "SELECT seq, hash FROM audit_records WHERE seq > $1 ORDER BY seq LIMIT $2",
                &[&size, &BATCH],
            )
            .await?;
        let mut leaves = Vec::with_capacity(rows.len());
        // Every run of missing seqs in this window, as (first missing, next present).
        let mut missing = Vec::new();
        let mut expected = size + 1;
        for r in &rows {
            let seq: i64 = r.get(0);
            if seq != expected {
                missing.push((expected, seq));
            } else if missing.is_empty() {
                let hash: Vec<u8> = r.get(1);
                leaves.push(tree::leaf(&hash));
            }
            expected = seq + 1;
        }
        let from = size.unsigned_abs();
        let grown = size + leaves.len() as i64;
        if !leaves.is_empty() {
            let known = fetch(&tx, &tree::needed_for_append(from, leaves.len() as u64)).await?;
            let added = tree::append(from, &leaves, &known).map_err(invalid)?;
            let (indexes, hashes): (Vec<i64>, Vec<Vec<u8>>) = added
                .iter()
                .map(|(i, h)| Ok((i64::try_from(*i).map_err(invalid)?, h.0.to_vec())))
                .collect::<Result<Vec<_>, ControlError>>()?
                .into_iter()
                .unzip();
            tx.execute(
                "INSERT INTO audit_tree_hashes (idx, hash) SELECT * FROM unnest($1::bigint[], $2::bytea[])",
                &[&indexes, &hashes],
            )
            .await?;
            tx.execute("UPDATE audit_tree SET size = $1", &[&grown])
                .await?;
        }
        let mut voided = 0;
        for (first, next) in &missing {
            voided += void_holes(&tx, *first, *next).await?;
        }
        tx.commit().await?;
        if voided == 0 && (!missing.is_empty() || (rows.len() as i64) < BATCH) {
            return Ok(grown.unsigned_abs());
        }
    }
}

/// Notes the seqs `first..next` as missing and fills those missing for longer than the
/// grace with void records; returns how many it filled. A hole is seen when the statement
/// that found it ran (`clock_timestamp()`, not the transaction's start, which may precede
/// the seq's taking by a wait for the ledger lock), so it is voided no sooner than a grace
/// after its writer took it.
async fn void_holes(
    tx: &deadpool_postgres::Transaction<'_>,
    first: i64,
    next: i64,
) -> Result<u64, ControlError> {
    tx.execute(
        "INSERT INTO audit_holes (seq, seen_at)
         SELECT generate_series($1::bigint, $2::bigint - 1), clock_timestamp()
         ON CONFLICT (seq) DO NOTHING",
        &[&first, &next],
    )
    .await?;
    let due: Vec<(i64, DateTime<Utc>)> = tx
        .query(
            "SELECT seq, seen_at FROM audit_holes
              WHERE seq >= $1 AND seq < $2 AND seen_at < now() - make_interval(secs => $3)
              ORDER BY seq",
            &[&first, &next, &HOLE_GRACE_SECS],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let mut voided = 0;
    for (seq, seen_at) in due {
        let record = void_record(seq, seen_at);
        let hash = void_hash(seq, &record).to_vec();
        // Waits for a batch that holds the seq uncommitted; yields to it if it commits.
        voided += tx
            .execute(
                "INSERT INTO audit_records (seq, void, at, request_id, adapter, tool, decision,
                    outcome, duration_us, cache_hit, prev_hash, hash)
                 VALUES ($1, true, $2, $3, $4, $5, $6, $7, 0, false, $8, $9)
                 ON CONFLICT (seq) DO NOTHING",
                &[
                    &seq,
                    &record.at,
                    &record.request_id,
                    &record.adapter,
                    &record.tool,
                    &record.decision,
                    &record.outcome.as_str(),
                    &GENESIS.to_vec(),
                    &hash,
                ],
            )
            .await?;
        tx.execute("DELETE FROM audit_holes WHERE seq = $1", &[&seq])
            .await?;
    }
    if voided > 0 {
        tracing::warn!(
            first,
            voided,
            "audit seqs that no batch committed were filled with void records"
        );
        metrics::counter!("interlock_audit_voids_total").increment(voided);
    }
    Ok(voided)
}

/// The void record for `seq`, missing since `seen_at`.
fn void_record(seq: i64, seen_at: DateTime<Utc>) -> AuditRecord {
    AuditRecord::void(
        seq,
        &format!(
            "no batch committed this seq, missing since {}: the batch that took it failed or went in again at other seqs",
            seen_at.to_rfc3339()
        ),
    )
}

/// The root hash of the stored tree's first `size` records.
pub async fn root(pool: &ControlPool, size: u64) -> Result<Hash, ControlError> {
    let client = pool.get().await?;
    let known = fetch(&client, &tree::needed_for_root(size)).await?;
    tree::root(size, &known).map_err(invalid)
}

/// The inclusion proof of leaf `n` (the record with seq `n + 1`) in the tree of `size`.
pub async fn inclusion(pool: &ControlPool, size: u64, n: u64) -> Result<Vec<Hash>, ControlError> {
    let client = pool.get().await?;
    let known = fetch(&client, &tree::needed_for_inclusion(size, n)).await?;
    tree::inclusion(size, n, &known).map_err(invalid)
}

/// The proof that the tree of `new` records extends the tree of `old`.
pub async fn consistency(
    pool: &ControlPool,
    new: u64,
    old: u64,
) -> Result<Vec<Hash>, ControlError> {
    let client = pool.get().await?;
    let known = fetch(&client, &tree::needed_for_consistency(new, old)).await?;
    tree::consistency(new, old, &known).map_err(invalid)
}

/// A checkpoint of the whole log, and whether this call stored it.
pub struct Made {
    pub checkpoint: StoredCheckpoint,
    pub new: bool,
}

/// Extends the tree and signs a checkpoint of it with `key`, unless the latest
/// checkpoint already covers every record; returns the checkpoint of the whole log.
pub async fn checkpoint(
    pool: &ControlPool,
    key: &CheckpointKey,
) -> Result<Option<Made>, ControlError> {
    let size = extend(pool).await?;
    if size == 0 {
        return Ok(None);
    }
    sign_at(pool, key, size).await.map(Some)
}

/// The checkpoint of exactly the first `size` records, signed now with `key` unless one
/// was made before (the tree is extended first; a checkpoint of an earlier size states
/// what the log held then, which its root proves). What an archived segment carries.
pub async fn checkpoint_at(
    pool: &ControlPool,
    key: &CheckpointKey,
    size: u64,
) -> Result<Made, ControlError> {
    let grown = extend(pool).await?;
    if size == 0 || size > grown {
        return Err(invalid(format!(
            "there is no tree of {size} records to sign (the tree holds {grown})"
        )));
    }
    sign_at(pool, key, size).await
}

async fn sign_at(pool: &ControlPool, key: &CheckpointKey, size: u64) -> Result<Made, ControlError> {
    if let Some(existing) = at_size(pool, size).await? {
        return Ok(Made {
            checkpoint: existing,
            new: false,
        });
    }
    let root = root(pool, size).await?;
    let signed: SignedCheckpoint = key.sign(size, root).map_err(invalid)?;
    let client = pool.get().await?;
    let tree_size = i64::try_from(size).map_err(invalid)?;
    let inserted = client
        .execute(
            "INSERT INTO audit_checkpoints (tree_size, root_hash, key_name, note)
             VALUES ($1, $2, $3, $4) ON CONFLICT (tree_size) DO NOTHING",
            &[&tree_size, &root.0.to_vec(), &key.name(), &signed.note],
        )
        .await?;
    let checkpoint = at_size(pool, size)
        .await?
        .ok_or_else(|| invalid(format!("the checkpoint of {size} records vanished")))?;
    Ok(Made {
        checkpoint,
        new: inserted == 1,
    })
}

/// The roots of the perfect subtrees of the tree of the first `size` records, largest
/// first: what stands for them once they are archived (`crate::ledger::offline::Prefix`).
pub async fn frontier(pool: &ControlPool, size: u64) -> Result<Vec<Hash>, ControlError> {
    let client = pool.get().await?;
    let indexes = tree::frontier_indexes(size);
    let known = fetch(&client, &indexes).await?;
    Ok(indexes.iter().map(|i| known[i]).collect())
}

const CHECKPOINT_COLUMNS: &str =
    "tree_size, root_hash, key_name, note, created_at, timestamp, timestamped_at, timestamp_error";

fn stored(r: &tokio_postgres::Row) -> StoredCheckpoint {
    use base64::Engine as _;
    let root: Vec<u8> = r.get(1);
    StoredCheckpoint {
        tree_size: r.get(0),
        root_hash: base64::engine::general_purpose::STANDARD.encode(root),
        key_name: r.get(2),
        note: r.get(3),
        created_at: r.get(4),
        timestamp: r
            .get::<_, Option<Vec<u8>>>(5)
            .map(|t| base64::engine::general_purpose::STANDARD.encode(t)),
        timestamped_at: r.get(6),
        timestamp_error: r.get(7),
    }
}

/// The checkpoint of exactly `size` records, if one was made.
pub async fn at_size(
    pool: &ControlPool,
    size: u64,
) -> Result<Option<StoredCheckpoint>, ControlError> {
    let client = pool.get().await?;
    let size = i64::try_from(size).map_err(invalid)?;
    let row = client
        .query_opt(
            &format!("SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints WHERE tree_size = $1"),
            &[&size],
        )
        .await?;
    Ok(row.as_ref().map(stored))
}

/// The first checkpoint that covers the record with `seq` (the smallest tree holding it).
pub async fn covering(
    pool: &ControlPool,
    seq: i64,
) -> Result<Option<StoredCheckpoint>, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            &format!(
                "SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints WHERE tree_size >= $1
                 ORDER BY tree_size LIMIT 1"
            ),
            &[&seq],
        )
        .await?;
    Ok(row.as_ref().map(stored))
}

/// Every checkpoint, oldest first (for export).
pub async fn all(pool: &ControlPool) -> Result<Vec<StoredCheckpoint>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            &format!("SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints ORDER BY tree_size"),
            &[],
        )
        .await?;
    Ok(rows.iter().map(stored).collect())
}

/// The checkpoints of more than `size` records, oldest first.
pub async fn after(pool: &ControlPool, size: i64) -> Result<Vec<StoredCheckpoint>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            &format!(
                "SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints WHERE tree_size > $1 ORDER BY tree_size"
            ),
            &[&size],
        )
        .await?;
    Ok(rows.iter().map(stored).collect())
}

/// Checkpoints, newest first.
pub async fn list(pool: &ControlPool, limit: i64) -> Result<Vec<StoredCheckpoint>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            &format!(
                "SELECT {CHECKPOINT_COLUMNS} FROM audit_checkpoints ORDER BY tree_size DESC LIMIT $1"
            ),
            &[&limit],
        )
        .await?;
    Ok(rows.iter().map(stored).collect())
}

/// The record with `seq` and its inclusion proof against the checkpoint of `size`
/// records, or the first checkpoint that covers it.
pub async fn prove_record(
    pool: &ControlPool,
    seq: i64,
    size: Option<u64>,
) -> Result<InclusionBundle, ControlError> {
    let Some(record) = super::audit::record(pool, seq).await? else {
        let archived = super::partitions::list(pool)
            .await?
            .into_iter()
            .find(|p| p.is_archived() && p.lower <= seq && seq < p.upper);
        return Err(ControlError::NotFound(match archived {
            Some(p) => format!(
                "record {seq} was archived to {}: that segment holds it with the signed checkpoint that covers it (`interlock audit verify --offline DIR --key KEY`)",
                p.archive_file.unwrap_or_default()
            ),
            None => format!("there is no audit record {seq}"),
        }));
    };
    let checkpoint = match size {
        Some(size) => at_size(pool, size).await?.ok_or_else(|| {
            ControlError::NotFound(format!("there is no checkpoint of {size} records"))
        })?,
        None => covering(pool, seq).await?.ok_or_else(|| {
            ControlError::NotFound(format!(
                "no checkpoint covers record {seq} yet; make one (`interlock audit checkpoint`)"
            ))
        })?,
    };
    let tree_size = checkpoint.tree_size.unsigned_abs();
    if seq < 1 || seq.unsigned_abs() > tree_size {
        return Err(invalid(format!(
            "record {seq} is not in the checkpoint of {tree_size} records"
        )));
    }
    let path = inclusion(pool, tree_size, seq.unsigned_abs() - 1).await?;
    Ok(InclusionBundle {
        format: INCLUSION_FORMAT.to_string(),
        seq,
        place: crate::ledger::place::Place::of(&record),
        record: record.record,
        prev_hash: hex::encode(&record.prev_hash),
        hash: hex::encode(&record.hash),
        proof: proof::encode(&path),
        checkpoint: checkpoint.note,
        timestamp: checkpoint.timestamp,
    })
}

/// The proof that the checkpoint of `to` records extends the one of `from` records.
pub async fn prove_consistency(
    pool: &ControlPool,
    from: u64,
    to: u64,
) -> Result<ConsistencyBundle, ControlError> {
    if from > to {
        return Err(invalid("the older, smaller checkpoint comes first"));
    }
    let missing = |n: u64| ControlError::NotFound(format!("there is no checkpoint of {n} records"));
    let old = at_size(pool, from).await?.ok_or_else(|| missing(from))?;
    let new = at_size(pool, to).await?.ok_or_else(|| missing(to))?;
    let path = consistency(pool, to, from).await?;
    Ok(ConsistencyBundle {
        format: CONSISTENCY_FORMAT.to_string(),
        old_checkpoint: old.note,
        new_checkpoint: new.note,
        proof: proof::encode(&path),
    })
}

/// Checkpoints still without a timestamp, oldest first: `(tree_size, note)`.
pub async fn unanchored(
    pool: &ControlPool,
    limit: i64,
) -> Result<Vec<(i64, String)>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT tree_size, note FROM audit_checkpoints WHERE timestamp IS NULL
             ORDER BY tree_size LIMIT $1",
            &[&limit],
        )
        .await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// Keeps the timestamp authority's response for the checkpoint of `tree_size`.
pub async fn set_timestamp(
    pool: &ControlPool,
    tree_size: i64,
    response: &[u8],
    at: DateTime<Utc>,
) -> Result<(), ControlError> {
    let client = pool.get().await?;
    client
        .execute(
            "UPDATE audit_checkpoints SET timestamp = $2, timestamped_at = $3, timestamp_error = NULL
             WHERE tree_size = $1 AND timestamp IS NULL",
            &[&tree_size, &response, &at],
        )
        .await?;
    Ok(())
}

/// Records why the checkpoint of `tree_size` could not be timestamped this time.
pub async fn set_timestamp_error(
    pool: &ControlPool,
    tree_size: i64,
    error: &str,
) -> Result<(), ControlError> {
    let client = pool.get().await?;
    client
        .execute(
            "UPDATE audit_checkpoints SET timestamp_error = $2 WHERE tree_size = $1 AND timestamp IS NULL",
            &[&tree_size, &error],
        )
        .await?;
    Ok(())
}
