//! The actor behind [`super::AuditHandle`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};
use tokio::sync::oneshot;

use super::record::{chain_hash, AuditRecord, GENESIS};
use super::AuditError;
use crate::supervise::supervisable;

type Reply = oneshot::Sender<Result<i64, AuditError>>;

pub struct AuditWriter {
    pool: deadpool_postgres::Pool,
    max_batch: usize,
    /// Records per partition of `audit_records`, for the partitions the writer creates.
    partition_records: i64,
    healthy: Arc<AtomicBool>,
    buffer: Vec<(AuditRecord, Reply)>,
    flushing: bool,
    /// The chain head this writer last committed, while it is known for sure: a batch is
    /// then one statement (which still checks, in the database, that the head is current).
    head: Option<Head>,
}

supervisable!(AuditWriter);

impl AuditWriter {
    /// Every incarnation starts with an empty buffer and the chain head unknown: its first
    /// batch reads the head (and a batch of its predecessor's that is still committing
    /// either lands first or finds its seqs taken).
    pub(super) fn new(
        pool: deadpool_postgres::Pool,
        max_batch: usize,
        partition_records: i64,
        healthy: Arc<AtomicBool>,
    ) -> Self {
        Self {
            pool,
            max_batch: max_batch.max(1),
            partition_records: partition_records.max(1),
            healthy,
            buffer: Vec::new(),
            flushing: false,
            head: None,
        }
    }

    fn flush(&mut self, ctx: &mut Context<Self>) {
        if self.flushing || self.buffer.is_empty() {
            return;
        }
        self.flushing = true;
        let take = self.buffer.len().min(self.max_batch);
        let batch: Vec<(AuditRecord, Reply)> = self.buffer.drain(..take).collect();
        let (records, replies): (Vec<AuditRecord>, Vec<Reply>) = batch.into_iter().unzip();
        let records: Vec<AuditRecord> = records.into_iter().map(AuditRecord::storable).collect();
        let pool = self.pool.clone();
        let healthy = self.healthy.clone();
        let head = self.head.take();
        let span = self.partition_records;
        let (done, committed) = oneshot::channel();
        // The batch is a task of its own, not the actor's: if the actor dies meanwhile, the
        // transaction still ends (committed or failed, never left open on a pooled
        // connection) and its callers are answered with what really happened.
        actix_rt::spawn(async move {
            let started = Instant::now();
            let size = records.len();
            let (results, head) = write_all(&pool, records, head, span).await;
            metrics::histogram!("interlock_audit_batch_size").record(size as f64);
            metrics::histogram!("interlock_audit_commit_seconds")
                .record(started.elapsed().as_secs_f64());
            let reachable = results.iter().any(Result::is_ok)
                || results
                    .iter()
                    .any(|r| matches!(r, Err(e) if e.is_statement_error()));
            healthy.store(reachable, Ordering::Release);
            for (result, reply) in results.into_iter().zip(replies) {
                let _ = reply.send(result.map_err(|e| {
                    tracing::error!(error = %e, "audit record could not be committed");
                    AuditError::Unavailable
                }));
            }
            let _ = done.send(head);
        });
        ctx.spawn(committed.into_actor(self).map(|head, act, ctx| {
            act.head = head.ok().flatten();
            act.flushing = false;
            act.flush(ctx);
        }));
    }
}

impl Actor for AuditWriter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // While unhealthy, probe the control database so health comes back without traffic.
        ctx.run_interval(Duration::from_secs(1), |act, ctx| {
            if act.healthy.load(Ordering::Acquire) {
                return;
            }
            let pool = act.pool.clone();
            ctx.spawn(
                async move {
                    match pool.get().await {
                        Ok(c) => c.simple_query("SELECT 1").await.is_ok(),
                        Err(_) => false,
                    }
                }
                .into_actor(act)
                .map(|ok, act, _| {
                    if ok {
                        tracing::info!("control database reachable again; audit healthy");
                        act.healthy.store(true, Ordering::Release);
                    }
                }),
            );
        });
    }
}

#[derive(Message)]
#[rtype(result = "()")]
pub struct Append {
    pub record: AuditRecord,
    pub reply: Reply,
}

impl Handler<Append> for AuditWriter {
    type Result = ();

    fn handle(&mut self, msg: Append, ctx: &mut Context<Self>) {
        self.buffer.push((msg.record, msg.reply));
        self.flush(ctx);
    }
}

#[derive(Debug, thiserror::Error)]
enum BatchError {
    #[error(transparent)]
    Pool(#[from] deadpool_postgres::PoolError),
    #[error(transparent)]
    Db(#[from] tokio_postgres::Error),
    #[error("the batch this record was in could not be committed")]
    Failed,
    #[error("other writers kept extending the audit chain; the batch was not appended")]
    HeadMoved,
    #[error("the audit log has no partition for the batch's sequence numbers")]
    NoPartition,
}

impl BatchError {
    /// Whether the database refused a statement of the batch (a record it cannot
    /// store), as opposed to being unreachable.
    fn is_statement_error(&self) -> bool {
        matches!(self, BatchError::Db(e) if e.as_db_error().is_some())
    }
}

/// The last record of the chain: its sequence number (0 for an empty chain) and hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Head {
    seq: i64,
    hash: Vec<u8>,
}

/// Writes `records` as one batch; if the database refuses a statement of it, writes them
/// one by one so that only the records it cannot store fail. One result per record, and
/// the chain head after the last commit (`None` when it is not known for sure).
async fn write_all(
    pool: &deadpool_postgres::Pool,
    records: Vec<AuditRecord>,
    head: Option<Head>,
    span: i64,
) -> (Vec<Result<i64, BatchError>>, Option<Head>) {
    let size = records.len();
    match write_batch(pool, &records, head, span).await {
        Ok((first, head)) => (
            (0..size).map(|i| Ok(first + i as i64)).collect(),
            Some(head),
        ),
        Err(e) if e.is_statement_error() && size > 1 => {
            tracing::warn!(error = %e, records = size, "audit batch refused; retrying record by record");
            let mut results = Vec::with_capacity(size);
            let mut head = None;
            for record in records {
                match write_batch(pool, std::slice::from_ref(&record), head.take(), span).await {
                    Ok((seq, h)) => {
                        head = Some(h);
                        results.push(Ok(seq));
                    }
                    Err(e) => results.push(Err(e)),
                }
            }
            (results, head)
        }
        Err(e) => {
            let mut results = vec![Err(e)];
            results.extend((1..size).map(|_| Err(BatchError::Failed)));
            (results, None)
        }
    }
}

/// How long a batch keeps re-reading the chain head while other writers keep extending the
/// chain, before its records are answered "audit unavailable": well inside the callers'
/// commit timeout. A fixed number of immediate retries was not enough: two busy writers
/// met at the same head again and again (`benches/audit_writers.rs` refused thousands of
/// appends in 5 s).
const RETRY_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// A random pause before re-reading a moved head, growing with the attempt (up to 6.4 ms),
/// so that competing writers stop arriving at the same head together.
fn backoff(attempt: u32) -> std::time::Duration {
    let cap_us = 200u64 << attempt.min(5);
    let jitter = (uuid::Uuid::new_v4().as_u128() % u128::from(cap_us)) as u64;
    std::time::Duration::from_micros(jitter)
}

/// Extends the chain with `records`; returns the first sequence number and the new head.
/// With the head known, that is one statement; when it is not known, or another writer
/// moved it, the head is read first (and read again, after a random pause, for up to
/// [`RETRY_BUDGET`] while other writers keep moving it). Should the batch run past the
/// last partition of `audit_records` (the gateway's maintenance creates them ahead), the
/// writer creates the next partitions itself, `span` records each, and appends again.
async fn write_batch(
    pool: &deadpool_postgres::Pool,
    records: &[AuditRecord],
    mut head: Option<Head>,
    span: i64,
) -> Result<(i64, Head), BatchError> {
    let client = pool.get().await?;
    let insert = insert_statement(&client).await?;
    let started = std::time::Instant::now();
    let mut attempt = 0;
    loop {
        let current = match head.take() {
            Some(known) => known,
            None => read_head(&client).await?,
        };
        match append(&client, &insert, records, &current).await {
            Err(BatchError::HeadMoved) if started.elapsed() < RETRY_BUDGET => {
                if attempt == 0 {
                    tracing::info!("the audit chain head moved (another writer); re-reading it");
                } else {
                    tokio::time::sleep(backoff(attempt)).await;
                }
                attempt += 1;
            }
            Err(BatchError::NoPartition) if started.elapsed() < RETRY_BUDGET => {
                let upto = current.seq + records.len() as i64;
                let made = client
                    .execute("SELECT audit_extend_partitions($1, $2)", &[&upto, &span])
                    .await?;
                tracing::warn!(
                    upto,
                    made,
                    "the audit log ran past its last partition; created the next"
                );
                head = Some(current);
            }
            other => return other,
        }
    }
}

/// Prepared once per pooled connection (the text is fixed). A batch is one statement
/// whatever its size: one array per column, unnested into rows, so the server binds and
/// executes once per batch instead of once per record. The statement guards the chain
/// itself: the rows go in only while the row at the expected head (`$22`) still carries the
/// expected hash (`$23`), or, for an empty chain (`$22` = 0), while the table is empty; the
/// guard is the same for every row, so a batch goes in whole or not at all. Another writer
/// that took the batch's seqs meanwhile is refused by the primary key.
async fn insert_statement(
    client: &deadpool_postgres::Client,
) -> Result<tokio_postgres::Statement, tokio_postgres::Error> {
    client
        .prepare_cached(
            "INSERT INTO audit_records (seq, at, request_id, identity_id, identity, adapter, dialect, tool,
                source_id, action, statement, fingerprint, decision, outcome, row_count, duration_us,
                cache_hit, approval_id, prev_hash, hash, statement_sha256)
             SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::uuid[], $5::text[],
                $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
                $13::jsonb[], $14::text[], $15::bigint[], $16::bigint[], $17::boolean[], $18::uuid[],
                $19::bytea[], $20::bytea[], $21::text[])
             WHERE CASE WHEN $22::bigint = 0 THEN NOT EXISTS (SELECT FROM audit_records)
                        ELSE EXISTS (SELECT FROM audit_records WHERE seq = $22 AND hash = $23::bytea)
                   END",
        )
        .await
}

/// The last record of the chain, as the table holds it now.
async fn read_head(client: &deadpool_postgres::Client) -> Result<Head, BatchError> {
    let read = client
        .prepare_cached("SELECT seq, hash FROM audit_records ORDER BY seq DESC LIMIT 1")
        .await?;
    Ok(match client.query_opt(&read, &[]).await? {
        Some(r) => Head {
            seq: r.get(0),
            hash: r.get(1),
        },
        None => Head {
            seq: 0,
            hash: GENESIS.to_vec(),
        },
    })
}

/// Appends `records` after `head` as one statement in its own implicit transaction. The
/// answer arrives after the commit (the server sends ReadyForQuery only once the implicit
/// transaction committed, and the driver waits for it), so a returned seq is durable.
async fn append(
    client: &deadpool_postgres::Client,
    insert: &tokio_postgres::Statement,
    records: &[AuditRecord],
    head: &Head,
) -> Result<(i64, Head), BatchError> {
    let chained = chain(records, head);
    let columns = Columns::of(records, &chained);
    match columns.insert(client, insert, head).await {
        Ok(n) if n == records.len() as u64 => Ok((head.seq + 1, new_head(&chained, head))),
        Ok(0) => Err(BatchError::HeadMoved),
        Ok(_) => Err(BatchError::Failed),
        Err(e) if seq_taken(&e) => Err(BatchError::HeadMoved),
        Err(e) if no_partition(&e) => Err(BatchError::NoPartition),
        Err(e) => Err(e.into()),
    }
}

/// Whether another writer already holds one of the batch's sequence numbers: the primary
/// key of a partition of `audit_records` (`audit_records_<lower>_pkey`) refused it.
fn seq_taken(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| {
        *db.code() == tokio_postgres::error::SqlState::UNIQUE_VIOLATION
            && db
                .constraint()
                .is_some_and(|c| c.starts_with("audit_records") && c.ends_with("_pkey"))
    })
}

/// Whether a record's seq lies beyond the last partition of `audit_records`.
fn no_partition(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| {
        *db.code() == tokio_postgres::error::SqlState::CHECK_VIOLATION
            && db.message().starts_with("no partition of relation")
    })
}

/// One record's place in the chain: sequence number, previous hash, own hash.
struct Link {
    seq: i64,
    prev: Vec<u8>,
    hash: Vec<u8>,
}

fn chain(records: &[AuditRecord], head: &Head) -> Vec<Link> {
    let (mut seq, mut prev) = (head.seq, head.hash.clone());
    records
        .iter()
        .map(|r| {
            seq += 1;
            let hash = chain_hash(&prev, seq, r).to_vec();
            Link {
                seq,
                prev: std::mem::replace(&mut prev, hash.clone()),
                hash,
            }
        })
        .collect()
}

fn new_head(chained: &[Link], head: &Head) -> Head {
    chained.last().map_or_else(
        || head.clone(),
        |l| Head {
            seq: l.seq,
            hash: l.hash.clone(),
        },
    )
}

/// A batch as one array per column of `audit_records`, in the insert's column order.
struct Columns<'a> {
    seq: Vec<i64>,
    at: Vec<chrono::DateTime<chrono::Utc>>,
    request_id: Vec<&'a str>,
    identity_id: Vec<Option<uuid::Uuid>>,
    identity: Vec<Option<&'a str>>,
    adapter: Vec<&'a str>,
    dialect: Vec<Option<&'a str>>,
    tool: Vec<&'a str>,
    source_id: Vec<Option<&'a str>>,
    action: Vec<Option<&'a str>>,
    statement: Vec<Option<&'a str>>,
    fingerprint: Vec<Option<&'a str>>,
    decision: Vec<&'a serde_json::Value>,
    outcome: Vec<&'static str>,
    row_count: Vec<Option<i64>>,
    duration_us: Vec<i64>,
    cache_hit: Vec<bool>,
    approval_id: Vec<Option<uuid::Uuid>>,
    prev_hash: Vec<&'a [u8]>,
    hash: Vec<&'a [u8]>,
    statement_sha256: Vec<Option<&'a str>>,
}

impl<'a> Columns<'a> {
    fn of(records: &'a [AuditRecord], chained: &'a [Link]) -> Self {
        Columns {
            seq: chained.iter().map(|l| l.seq).collect(),
            at: records.iter().map(|r| r.at).collect(),
            request_id: records.iter().map(|r| r.request_id.as_str()).collect(),
            identity_id: records.iter().map(|r| r.identity_id).collect(),
            identity: records.iter().map(|r| r.identity.as_deref()).collect(),
            adapter: records.iter().map(|r| r.adapter.as_str()).collect(),
            dialect: records.iter().map(|r| r.dialect.as_deref()).collect(),
            tool: records.iter().map(|r| r.tool.as_str()).collect(),
            source_id: records.iter().map(|r| r.source_id.as_deref()).collect(),
            action: records.iter().map(|r| r.action.as_deref()).collect(),
            statement: records.iter().map(|r| r.statement.as_deref()).collect(),
            fingerprint: records.iter().map(|r| r.fingerprint.as_deref()).collect(),
            decision: records.iter().map(|r| &r.decision).collect(),
            outcome: records.iter().map(|r| r.outcome.as_str()).collect(),
            row_count: records.iter().map(|r| r.row_count).collect(),
            duration_us: records.iter().map(|r| r.duration_us).collect(),
            cache_hit: records.iter().map(|r| r.cache_hit).collect(),
            approval_id: records.iter().map(|r| r.approval_id).collect(),
            prev_hash: chained.iter().map(|l| l.prev.as_slice()).collect(),
            hash: chained.iter().map(|l| l.hash.as_slice()).collect(),
            statement_sha256: records
                .iter()
                .map(|r| r.statement_sha256.as_deref())
                .collect(),
        }
    }

    async fn insert(
        &self,
        client: &deadpool_postgres::Client,
        insert: &tokio_postgres::Statement,
        head: &Head,
    ) -> Result<u64, tokio_postgres::Error> {
        client
            .execute(
                insert,
                &[
                    &self.seq,
                    &self.at,
                    &self.request_id,
                    &self.identity_id,
                    &self.identity,
                    &self.adapter,
                    &self.dialect,
                    &self.tool,
                    &self.source_id,
                    &self.action,
                    &self.statement,
                    &self.fingerprint,
                    &self.decision,
                    &self.outcome,
                    &self.row_count,
                    &self.duration_us,
                    &self.cache_hit,
                    &self.approval_id,
                    &self.prev_hash,
                    &self.hash,
                    &self.statement_sha256,
                    &head.seq,
                    &head.hash,
                ],
            )
            .await
    }
}
