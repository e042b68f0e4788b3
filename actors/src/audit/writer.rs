//! The actor behind [`super::AuditHandle`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};
use tokio::sync::oneshot;

use super::record::{chain_hash, AuditRecord, GENESIS};
use super::AuditError;

/// Arbitrary constant naming the audit chain lock ("ILAUDIT").
const CHAIN_LOCK: i64 = 0x494c_4155_4449_5400;

type Reply = oneshot::Sender<Result<i64, AuditError>>;

pub struct AuditWriter {
    pool: deadpool_postgres::Pool,
    max_batch: usize,
    healthy: Arc<AtomicBool>,
    buffer: Vec<(AuditRecord, Reply)>,
    flushing: bool,
}

impl AuditWriter {
    pub(super) fn new(
        pool: deadpool_postgres::Pool,
        max_batch: usize,
        healthy: Arc<AtomicBool>,
    ) -> Self {
        Self {
            pool,
            max_batch: max_batch.max(1),
            healthy,
            buffer: Vec::new(),
            flushing: false,
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
        let started = Instant::now();
        let size = records.len();
        ctx.spawn(
            async move { write_all(&pool, records).await }
                .into_actor(self)
                .map(move |results, act, ctx| {
                    metrics::histogram!("interlock_audit_batch_size").record(size as f64);
                    metrics::histogram!("interlock_audit_commit_seconds")
                        .record(started.elapsed().as_secs_f64());
                    let reachable = results.iter().any(Result::is_ok)
                        || results
                            .iter()
                            .any(|r| matches!(r, Err(e) if e.is_statement_error()));
                    act.healthy.store(reachable, Ordering::Release);
                    for (result, reply) in results.into_iter().zip(replies) {
                        let _ = reply.send(result.map_err(|e| {
                            tracing::error!(error = %e, "audit record could not be committed");
                            AuditError::Unavailable
                        }));
                    }
                    act.flushing = false;
                    act.flush(ctx);
                }),
        );
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
}

impl BatchError {
    /// Whether the database refused a statement of the batch (a record it cannot
    /// store), as opposed to being unreachable.
    fn is_statement_error(&self) -> bool {
        matches!(self, BatchError::Db(e) if e.as_db_error().is_some())
    }
}

/// Writes `records` as one batch; if the database refuses a statement of it, writes them
/// one by one so that only the records it cannot store fail. One result per record.
async fn write_all(
    pool: &deadpool_postgres::Pool,
    records: Vec<AuditRecord>,
) -> Vec<Result<i64, BatchError>> {
    let size = records.len();
    match write_batch(pool, &records).await {
        Ok(first) => (0..size).map(|i| Ok(first + i as i64)).collect(),
        Err(e) if e.is_statement_error() && size > 1 => {
            tracing::warn!(error = %e, records = size, "audit batch refused; retrying record by record");
            let mut results = Vec::with_capacity(size);
            for record in records {
                results.push(write_batch(pool, std::slice::from_ref(&record)).await);
            }
            results
        }
        Err(e) => {
            let mut results = vec![Err(e)];
            results.extend((1..size).map(|_| Err(BatchError::Failed)));
            results
        }
    }
}

/// Extends the chain with `records` in one transaction; returns the first sequence number.
async fn write_batch(
    pool: &deadpool_postgres::Pool,
    records: &[AuditRecord],
) -> Result<i64, BatchError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    // Prepared once per pooled connection, then sent back to back: PostgreSQL runs them in
    // order, so the chain head is read only once the chain lock is held.
    let (lock, head) = futures_util::future::try_join(
        tx.prepare_cached("SELECT pg_advisory_xact_lock($1)"),
        tx.prepare_cached("SELECT seq, hash FROM audit_records ORDER BY seq DESC LIMIT 1"),
    )
    .await?;
    let (_, last) =
        futures_util::future::try_join(tx.execute(&lock, &[&CHAIN_LOCK]), tx.query_opt(&head, &[]))
            .await?;
    let (mut seq, mut prev): (i64, Vec<u8>) = match last {
        Some(r) => (r.get(0), r.get(1)),
        None => (0, GENESIS.to_vec()),
    };
    let first = seq + 1;
    // Cached per pooled connection: one round trip less per batch.
    let insert = tx
        .prepare_cached(
            "INSERT INTO audit_records (seq, at, request_id, identity_id, identity, adapter, dialect, tool,
                source_id, action, statement, fingerprint, decision, outcome, row_count, duration_us,
                cache_hit, approval_id, prev_hash, hash, statement_sha256)
             VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21)",
        )
        .await?;
    let mut pending = Vec::with_capacity(records.len());
    for r in records {
        seq += 1;
        let hash = chain_hash(&prev, seq, r).to_vec();
        pending.push((seq, prev.clone(), hash.clone()));
        prev = hash;
    }
    let (txr, insert) = (&tx, &insert);
    let inserts = records
        .iter()
        .zip(&pending)
        .map(|(r, (seq, prev, hash))| async move {
            let outcome = r.outcome.as_str();
            txr.execute(
                insert,
                &[
                    seq,
                    &r.at,
                    &r.request_id,
                    &r.identity_id,
                    &r.identity,
                    &r.adapter,
                    &r.dialect,
                    &r.tool,
                    &r.source_id,
                    &r.action,
                    &r.statement,
                    &r.fingerprint,
                    &r.decision,
                    &outcome,
                    &r.row_count,
                    &r.duration_us,
                    &r.cache_hit,
                    &r.approval_id,
                    prev,
                    hash,
                    &r.statement_sha256,
                ],
            )
            .await
        });
    // Pipelined: tokio-postgres sends all inserts before waiting for the first answer.
    futures_util::future::try_join_all(inserts).await?;
    tx.commit().await?;
    Ok(first)
}
