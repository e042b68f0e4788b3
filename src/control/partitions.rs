//! The audit log's partitions (migration 0014): ranges of seq, created ahead of the head,
//! archived and dropped once closed. This is the bookkeeping and the DDL; writing and
//! checking the archive files is the archiver's business, a layer up.

use chrono::{DateTime, Utc};
use interlock_actors::audit::ChainHead;
use serde::Serialize;

use super::{ControlError, ControlPool};
use crate::ledger::offline::PrefixHead;

/// One partition of `audit_records`, live or archived.
#[derive(Debug, Clone, Serialize)]
pub struct Partition {
    /// The first seq it holds.
    pub lower: i64,
    /// One past the last seq it holds.
    pub upper: i64,
    pub name: String,
    pub archived_at: Option<DateTime<Utc>>,
    /// The segment file it was archived to (its name, not a path).
    pub archive_file: Option<String>,
    /// Hex SHA-256 of that file.
    pub archive_sha256: Option<String>,
    pub archive_records: Option<i64>,
    /// Hex: the chain hash of its last record, kept when it was archived.
    #[serde(serialize_with = "hex_opt")]
    pub last_hash: Option<Vec<u8>>,
}

fn hex_opt<S: serde::Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(b) => s.serialize_some(&hex::encode(b)),
        None => s.serialize_none(),
    }
}

impl Partition {
    pub fn is_archived(&self) -> bool {
        self.archived_at.is_some()
    }
}

fn partition(r: &tokio_postgres::Row) -> Partition {
    Partition {
        lower: r.get(0),
        upper: r.get(1),
        name: r.get(2),
        archived_at: r.get(3),
        archive_file: r.get(4),
        archive_sha256: r.get(5),
        archive_records: r.get(6),
        last_hash: r.get(7),
    }
}

const COLUMNS: &str =
    "lower, upper, name, archived_at, archive_file, archive_sha256, archive_records, last_hash";

/// Every partition, oldest first.
pub async fn list(pool: &ControlPool) -> Result<Vec<Partition>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            &format!("SELECT {COLUMNS} FROM audit_partitions ORDER BY lower"),
            &[],
        )
        .await?;
    Ok(rows.iter().map(partition).collect())
}

/// Creates partitions of `span` records until one holds the seq `span / 2` past the head,
/// so the writer never has to; returns how many it created.
pub async fn ensure_ahead(pool: &ControlPool, span: i64) -> Result<i32, ControlError> {
    if span < 1 {
        return Err(ControlError::Invalid(format!(
            "audit.partition_records must be at least 1 (is {span})"
        )));
    }
    let client = pool.get().await?;
    let made: i32 = client
        .query_one(
            "SELECT audit_extend_partitions(
                 coalesce((SELECT max(seq) FROM audit_records), 0) + greatest($1::bigint / 2, 1),
                 $1::bigint)",
            &[&span],
        )
        .await?
        .get(0);
    Ok(made)
}

/// The live partitions that are closed (every seq they can hold is below the chain's head,
/// which stays live), whose last record is older than `before` when given, oldest first.
pub async fn closed(
    pool: &ControlPool,
    before: Option<DateTime<Utc>>,
) -> Result<Vec<Partition>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            &format!(
                "SELECT {COLUMNS} FROM audit_partitions p
                  WHERE archived_at IS NULL
                    AND upper <= (SELECT max(seq) FROM audit_records)
                    AND ($1::timestamptz IS NULL
                         OR (SELECT at FROM audit_records WHERE seq = p.upper - 1) < $1)
                  ORDER BY lower"
            ),
            &[&before],
        )
        .await?;
    Ok(rows.iter().map(partition).collect())
}

/// Where the live log starts.
pub enum LiveStart {
    /// No live record.
    Empty,
    /// The first live record is `seq + 1`; `archived` is what was kept of the archived
    /// partition ending at `seq` (none when `seq` is 0 or no archived partition ends there).
    After {
        seq: i64,
        archived: Option<ArchivedEnd>,
    },
}

/// What the log keeps of its archived part: the hash of its last record and every chain's
/// last record in it, which the live records must go on from.
#[derive(Debug, Clone)]
pub struct ArchivedEnd {
    pub last_hash: Vec<u8>,
    pub heads: Vec<ChainHead>,
}

pub async fn live_start(pool: &ControlPool) -> Result<LiveStart, ControlError> {
    let client = pool.get().await?;
    let Some(first) = client
        .query_opt("SELECT seq FROM audit_records ORDER BY seq LIMIT 1", &[])
        .await?
    else {
        return Ok(LiveStart::Empty);
    };
    let seq: i64 = first.get::<_, i64>(0) - 1;
    let archived = archived_end(pool, seq).await?;
    Ok(LiveStart::After { seq, archived })
}

/// What was kept of the archived partition that ends at record `seq`.
pub async fn archived_end(
    pool: &ControlPool,
    seq: i64,
) -> Result<Option<ArchivedEnd>, ControlError> {
    let client = pool.get().await?;
    let Some(row) = client
        .query_opt(
            "SELECT last_hash, chain_heads FROM audit_partitions
              WHERE upper = $1 AND archived_at IS NOT NULL AND last_hash IS NOT NULL",
            &[&(seq + 1)],
        )
        .await?
    else {
        return Ok(None);
    };
    let last_hash: Vec<u8> = row.get(0);
    let heads = match row.get::<_, Option<serde_json::Value>>(1) {
        Some(v) => {
            let kept: Vec<PrefixHead> = serde_json::from_value(v)
                .map_err(|e| ControlError::Invalid(format!("audit_partitions.chain_heads: {e}")))?;
            kept.iter()
                .map(|h| {
                    Ok(ChainHead {
                        chain: h.chain,
                        chain_seq: h.chain_seq,
                        hash: hex::decode(&h.hash).map_err(|e| {
                            ControlError::Invalid(format!("audit_partitions.chain_heads: {e}"))
                        })?,
                    })
                })
                .collect::<Result<_, ControlError>>()?
        }
        // Archived before chains per writer: the founding chain ended at `seq`.
        None => vec![ChainHead {
            chain: interlock_actors::audit::record::FOUNDING_CHAIN,
            chain_seq: seq,
            hash: last_hash.clone(),
        }],
    };
    Ok(Some(ArchivedEnd { last_hash, heads }))
}

/// What archiving a partition wrote.
pub struct Archived<'a> {
    pub file: &'a str,
    pub sha256: &'a str,
    pub records: i64,
    pub last_hash: &'a [u8],
    /// Every chain's last record up to the partition's end.
    pub heads: &'a [PrefixHead],
}

/// Records that `part` was archived (before it is dropped: a crash in between leaves a
/// partition that is both, and archiving it again rewrites the file).
pub async fn mark_archived(
    pool: &ControlPool,
    part: &Partition,
    archived: &Archived<'_>,
) -> Result<(), ControlError> {
    let client = pool.get().await?;
    client
        .execute(
            "UPDATE audit_partitions SET archived_at = now(), archive_file = $2,
                    archive_sha256 = $3, archive_records = $4, last_hash = $5, chain_heads = $6
              WHERE lower = $1",
            &[
                &part.lower,
                &archived.file,
                &archived.sha256,
                &archived.records,
                &archived.last_hash,
                &serde_json::to_value(archived.heads)
                    .map_err(|e| ControlError::Invalid(e.to_string()))?,
            ],
        )
        .await?;
    Ok(())
}

/// Detaches `part` from `audit_records` without blocking appends or reads (`DETACH
/// PARTITION … CONCURRENTLY`, finishing one an earlier attempt left pending) and drops it.
pub async fn drop_partition(pool: &ControlPool, part: &Partition) -> Result<(), ControlError> {
    let client = pool.get().await?;
    let attached = client
        .query_opt(
            "SELECT i.inhdetachpending FROM pg_inherits i
               JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = 'audit_records'::regclass AND c.relname = $1",
            &[&part.name],
        )
        .await?;
    let name = quote_ident(&part.name);
    match attached.map(|r| r.get::<_, bool>(0)) {
        Some(false) => {
            client
                .batch_execute(&format!(
                    "ALTER TABLE audit_records DETACH PARTITION {name} CONCURRENTLY"
                ))
                .await?;
        }
        Some(true) => {
            client
                .batch_execute(&format!(
                    "ALTER TABLE audit_records DETACH PARTITION {name} FINALIZE"
                ))
                .await?;
        }
        None => {}
    }
    client
        .batch_execute(&format!("DROP TABLE IF EXISTS {name}"))
        .await?;
    Ok(())
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
