//! Reading the audit chain: verification and filtered listing.

use futures_util::TryStreamExt;
use interlock_actors::audit::{
    AuditRecord, ChainBreak, ChainVerifier, ChainedRecord, RecordOutcome,
};
use serde::Serialize;

use super::{ControlError, ControlPool};

/// The result of checking the live chain.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub ok: bool,
    /// The first live record (records before it were archived; 1 when none was).
    pub first_seq: i64,
    pub records: u64,
    /// Seqs missing past the tree's size (batches still committing, or not yet voided).
    pub pending: u64,
    /// Void records: seqs that batches which did not commit had taken.
    pub voids: u64,
    /// How many chains the live records are in.
    pub chains: usize,
    pub first_break: Option<ChainBreak>,
}

const COLUMNS: &str = "seq, chain, chain_seq, void, at, request_id, identity_id, identity, adapter, dialect, tool,
    source_id, action, statement, fingerprint, decision, outcome, row_count, duration_us, cache_hit, approval_id,
    prev_hash, hash, statement_sha256";

fn from_row(r: &tokio_postgres::Row) -> Result<ChainedRecord, ControlError> {
    let outcome: String = r.get("outcome");
    let seq: i64 = r.get("seq");
    Ok(ChainedRecord {
        seq,
        // Records written before chains per writer are the founding chain, placed by seq.
        chain: r
            .get::<_, Option<uuid::Uuid>>("chain")
            .unwrap_or(interlock_actors::audit::record::FOUNDING_CHAIN),
        chain_seq: r.get::<_, Option<i64>>("chain_seq").unwrap_or(seq),
        void: r.get("void"),
        record: AuditRecord {
            at: r.get("at"),
            request_id: r.get("request_id"),
            identity_id: r.get("identity_id"),
            identity: r.get("identity"),
            adapter: r.get("adapter"),
            dialect: r.get("dialect"),
            tool: r.get("tool"),
            source_id: r.get("source_id"),
            action: r.get("action"),
            statement: r.get("statement"),
            fingerprint: r.get("fingerprint"),
            decision: r.get("decision"),
            outcome: RecordOutcome::parse(&outcome).ok_or_else(|| {
                ControlError::Invalid(format!("unknown audit outcome {outcome:?}"))
            })?,
            row_count: r.get("row_count"),
            duration_us: r.get("duration_us"),
            cache_hit: r.get("cache_hit"),
            approval_id: r.get("approval_id"),
            statement_sha256: r.get("statement_sha256"),
        },
        prev_hash: r.get("prev_hash"),
        hash: r.get("hash"),
    })
}

/// Recomputes every hash of the live log in sequence order, streaming the records, and
/// checks that each chain goes on record by record. When earlier records were archived,
/// each chain goes on from its last archived record (kept in `audit_partitions` when its
/// partition was dropped). Seqs past the tree's size may be missing: their batches may
/// still be committing, or did not commit and are not voided yet (`pending`).
pub async fn verify(pool: &ControlPool) -> Result<VerifyReport, ControlError> {
    let tree = i64::try_from(super::ledger::tree_size(pool).await?).unwrap_or(i64::MAX);
    let (first_seq, verifier) = match super::partitions::live_start(pool).await? {
        super::partitions::LiveStart::Empty => (1, ChainVerifier::default()),
        super::partitions::LiveStart::After { seq: 0, .. } => (1, ChainVerifier::default()),
        super::partitions::LiveStart::After {
            seq,
            archived: Some(end),
        } => (
            seq + 1,
            ChainVerifier::resume(seq, end.last_hash, end.heads),
        ),
        super::partitions::LiveStart::After {
            seq,
            archived: None,
        } => {
            return Ok(VerifyReport {
                ok: false,
                first_seq: seq + 1,
                records: 0,
                pending: 0,
                voids: 0,
                chains: 0,
                first_break: Some(ChainBreak {
                    seq: seq + 1,
                    reason: format!(
                        "the log starts at record {} but no archived partition ends at record {seq}: records before it are missing",
                        seq + 1
                    ),
                }),
            });
        }
    };
    let mut verifier = verifier.allow_gaps_after(tree.max(first_seq - 1));
    let mut first_break = None;
    each_from(pool, first_seq, |record| {
        if first_break.is_none() {
            first_break = verifier.check(&record).err();
        }
        Ok(())
    })
    .await?;
    Ok(VerifyReport {
        ok: first_break.is_none(),
        first_seq,
        records: verifier.checked,
        pending: verifier.pending,
        voids: verifier.voids,
        chains: verifier.heads().len(),
        first_break,
    })
}

/// Calls `visit` with every live record in sequence order, streaming; returns how many.
pub async fn each(
    pool: &ControlPool,
    visit: impl FnMut(ChainedRecord) -> Result<(), ControlError>,
) -> Result<u64, ControlError> {
    each_between(pool, i64::MIN, i64::MAX, visit).await
}

/// Like [`each`], from record `first` on.
async fn each_from(
    pool: &ControlPool,
    first: i64,
    visit: impl FnMut(ChainedRecord) -> Result<(), ControlError>,
) -> Result<u64, ControlError> {
    each_between(pool, first, i64::MAX, visit).await
}

/// Calls `visit` with the records `lower <= seq < upper` in sequence order, streaming.
pub async fn each_between(
    pool: &ControlPool,
    lower: i64,
    upper: i64,
    mut visit: impl FnMut(ChainedRecord) -> Result<(), ControlError>,
) -> Result<u64, ControlError> {
    let client = pool.get().await?;
    let stream = client
        .query_raw(
            &format!(
                "SELECT {COLUMNS} FROM audit_records WHERE seq >= $1 AND seq < $2 ORDER BY seq"
            ),
            [&lower as &(dyn tokio_postgres::types::ToSql + Sync), &upper],
        )
        .await?;
    futures_util::pin_mut!(stream);
    let mut n = 0;
    while let Some(row) = stream.try_next().await? {
        visit(from_row(&row)?)?;
        n += 1;
    }
    Ok(n)
}

/// What finds an auditor's records: the request or the approval they belong to.
#[derive(Debug, Clone)]
pub enum RecordsOf {
    /// Every record of one request (a scan of the log: for an auditor's command, not for a
    /// governed call).
    Request(String),
    /// Every record of one approval (`audit_approval` index).
    Approval(uuid::Uuid),
}

impl std::fmt::Display for RecordsOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordsOf::Request(id) => write!(f, "request {id}"),
            RecordsOf::Approval(id) => write!(f, "approval {id}"),
        }
    }
}

/// The sequence numbers of the records `of` names, in order.
pub async fn seqs_of(pool: &ControlPool, of: &RecordsOf) -> Result<Vec<i64>, ControlError> {
    let client = pool.get().await?;
    let rows = match of {
        RecordsOf::Request(id) => {
            client
                .query(
                    "SELECT seq FROM audit_records WHERE request_id = $1 ORDER BY seq",
                    &[id],
                )
                .await?
        }
        RecordsOf::Approval(id) => {
            client
                .query(
                    "SELECT seq FROM audit_records WHERE approval_id = $1 ORDER BY seq",
                    &[id],
                )
                .await?
        }
    };
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The record with sequence number `seq`, as stored.
pub async fn record(pool: &ControlPool, seq: i64) -> Result<Option<ChainedRecord>, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            &format!("SELECT {COLUMNS} FROM audit_records WHERE seq = $1"),
            &[&seq],
        )
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Filters of the audit listing.
#[derive(Debug, Default, Clone)]
pub struct AuditFilter {
    pub identity: Option<String>,
    pub source: Option<String>,
    pub outcome: Option<String>,
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    pub until: Option<chrono::DateTime<chrono::Utc>>,
    /// Only records older than this sequence number (paging, newest first).
    pub before_seq: Option<i64>,
    pub limit: i64,
}

/// Records matching `f`, newest first.
pub async fn list(
    pool: &ControlPool,
    f: &AuditFilter,
) -> Result<Vec<(i64, AuditRecord)>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            &format!(
                "SELECT {COLUMNS} FROM audit_records
                  WHERE ($1::text IS NULL OR identity = $1)
                    AND ($2::text IS NULL OR source_id = $2)
                    AND ($3::text IS NULL OR outcome = $3)
                    AND ($4::timestamptz IS NULL OR at >= $4)
                    AND ($5::timestamptz IS NULL OR at < $5)
                    AND ($6::bigint IS NULL OR seq < $6)
                    AND NOT void
                  ORDER BY seq DESC LIMIT $7"
            ),
            &[
                &f.identity,
                &f.source,
                &f.outcome,
                &f.since,
                &f.until,
                &f.before_seq,
                &f.limit.clamp(1, 1000),
            ],
        )
        .await?;
    rows.iter()
        .map(|r| from_row(r).map(|c| (c.seq, c.record)))
        .collect()
}

/// A governed query's record as a replay reads it.
#[derive(Debug, Clone)]
pub struct ReplayableRecord {
    pub seq: i64,
    pub at: chrono::DateTime<chrono::Utc>,
    pub identity: String,
    pub source: String,
    pub statement: String,
    pub fingerprint: Option<String>,
    /// The record's `decision.replay` (facts, parameter count, effect).
    pub replay: serde_json::Value,
}

/// Which records a replay reads.
#[derive(Debug, Clone, Default)]
pub struct ReplayFilter {
    pub since: Option<chrono::DateTime<chrono::Utc>>,
    pub until: Option<chrono::DateTime<chrono::Utc>>,
    pub source: Option<String>,
    pub identity: Option<String>,
}

/// Up to `limit` live records of governed queries that kept what a replay needs
/// (`decision.replay`) with a seq above `after`, oldest first (keyset pages: a replay of a
/// long log reads it page by page, never all at once).
pub async fn replayable_page(
    pool: &ControlPool,
    f: &ReplayFilter,
    after: i64,
    limit: i64,
) -> Result<Vec<ReplayableRecord>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT seq, at, identity, source_id, statement, fingerprint, decision -> 'replay',
                    statement_sha256
               FROM audit_records
              WHERE seq > $5 AND NOT void AND decision ? 'replay'
                AND identity IS NOT NULL AND source_id IS NOT NULL AND statement IS NOT NULL
                AND ($1::timestamptz IS NULL OR at >= $1)
                AND ($2::timestamptz IS NULL OR at < $2)
                AND ($3::text IS NULL OR source_id = $3)
                AND ($4::text IS NULL OR identity = $4)
              ORDER BY seq LIMIT $6",
            &[&f.since, &f.until, &f.source, &f.identity, &after, &limit],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|row| ReplayableRecord {
            seq: row.get(0),
            at: row.get(1),
            identity: row.get(2),
            source: row.get(3),
            statement: match row.get::<_, Option<String>>(7) {
                // Stored escaped (it held NUL): the original text.
                Some(_) => interlock_actors::audit::storable::unescape(row.get::<_, &str>(4)),
                None => row.get(4),
            },
            fingerprint: row.get(5),
            replay: row.get(6),
        })
        .collect())
}
