//! The actor behind [`super::AuditHandle`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, ActorFutureExt, AsyncContext, Context, Handler, Message, WrapFuture};
use tokio::sync::oneshot;

use super::record::{chain_genesis, chain_hash, void_hash, AuditRecord, RecordOutcome, GENESIS};
use super::target::{self, Insert, Partition};
use super::AuditError;
use crate::supervise::supervisable;

pub(super) type Reply = oneshot::Sender<Result<i64, AuditError>>;

pub struct AuditWriter {
    queue: Queue,
}

supervisable!(AuditWriter);

/// What a writer keeps between batches, the supervised one and those seated on callers'
/// threads alike.
pub(super) struct Queue {
    pool: deadpool_postgres::Pool,
    healthy: Arc<AtomicBool>,
    max_batch: usize,
    /// Records per partition of `audit_records`, for the partitions the writer creates.
    partition_records: i64,
    /// Records waiting for a batch, with their repliers and when they arrived.
    pub(super) buffer: Vec<Waiting>,
    flushing: bool,
    /// This incarnation's chain (none until its first batch).
    chain: Option<Chain>,
    /// The partition its last batch went to (none: not known yet, or the parent).
    partition: Option<Partition>,
}

impl Queue {
    /// An empty queue, whose first batch starts a chain of its own.
    pub(super) fn new(
        pool: deadpool_postgres::Pool,
        max_batch: usize,
        partition_records: i64,
        healthy: Arc<AtomicBool>,
    ) -> Self {
        Self {
            pool,
            healthy,
            max_batch: max_batch.max(1),
            partition_records: partition_records.max(1),
            buffer: Vec::new(),
            flushing: false,
            chain: None,
            partition: None,
        }
    }

    /// The next batch and its records (up to `max_batch` of those waiting), unless one is
    /// in flight or none wait. The batch is in flight until [`Self::ended`].
    pub(super) fn next_batch(&mut self) -> Option<(Batch, Vec<Waiting>)> {
        if self.flushing || self.buffer.is_empty() {
            return None;
        }
        self.flushing = true;
        let take = self.buffer.len().min(self.max_batch);
        let waiting: Vec<Waiting> = self.buffer.drain(..take).collect();
        let batch = Batch {
            pool: self.pool.clone(),
            healthy: self.healthy.clone(),
            chain: self.chain.take().unwrap_or_else(Chain::fresh),
            partition: self.partition.take(),
            span: self.partition_records,
        };
        Some((batch, waiting))
    }

    /// The batch in flight ended, with the chain and partition to go on with; none: it
    /// ended abnormally, and the next batch starts a chain of its own.
    pub(super) fn ended(&mut self, end: Option<(Chain, Option<Partition>)>) {
        self.flushing = false;
        (self.chain, self.partition) = match end {
            Some((chain, partition)) => (Some(chain), partition),
            None => (None, None),
        };
    }
}

impl AuditWriter {
    /// Every incarnation starts with an empty queue and a chain of its own: a batch of its
    /// predecessor's that is still committing lands in the predecessor's chain.
    pub(super) fn new(queue: Queue) -> Self {
        Self { queue }
    }

    fn flush(&mut self, ctx: &mut Context<Self>) {
        let Some((batch, waiting)) = self.queue.next_batch() else {
            return;
        };
        let (done, committed) = oneshot::channel();
        // The batch is a task of its own, not the actor's: if the actor dies meanwhile, the
        // transaction still ends (committed or failed, never left open on a pooled
        // connection) and its callers are answered with what really happened.
        actix_rt::spawn(async move {
            let _ = done.send(batch.commit(waiting).await);
        });
        ctx.spawn(committed.into_actor(self).map(|ended, act, ctx| {
            act.queue.ended(ended.ok());
            act.flush(ctx);
        }));
    }
}

/// A record waiting for a batch: its replier and when it arrived.
pub(super) type Waiting = (AuditRecord, Reply, Instant);

/// One batch's commit: where it goes and what it reports to.
pub(super) struct Batch {
    pool: deadpool_postgres::Pool,
    healthy: Arc<AtomicBool>,
    chain: Chain,
    partition: Option<Partition>,
    /// Records per partition the writer creates when the log runs past the last one.
    span: i64,
}

impl Batch {
    /// Commits `waiting` as one batch and answers each caller with what really happened;
    /// returns the chain and partition to go on with.
    pub(super) async fn commit(self, waiting: Vec<Waiting>) -> (Chain, Option<Partition>) {
        let mut records = Vec::with_capacity(waiting.len());
        let mut replies = Vec::with_capacity(waiting.len());
        for (record, reply, arrived) in waiting {
            step("queued", arrived.elapsed());
            records.push(record.storable());
            replies.push(reply);
        }
        let started = Instant::now();
        let size = records.len();
        let (results, chain, partition) =
            write_all(&self.pool, records, self.chain, self.partition, self.span).await;
        metrics::histogram!("interlock_audit_batch_size").record(size as f64);
        metrics::histogram!("interlock_audit_commit_seconds")
            .record(started.elapsed().as_secs_f64());
        let reachable = results.iter().any(Result::is_ok)
            || results
                .iter()
                .any(|r| matches!(r, Err(e) if e.is_statement_error()));
        self.healthy.store(reachable, Ordering::Release);
        for (result, reply) in results.into_iter().zip(replies) {
            let _ = reply.send(result.map_err(|e| {
                tracing::error!(error = %e, "audit record could not be committed");
                AuditError::Unavailable
            }));
        }
        (chain, partition)
    }
}

impl Actor for AuditWriter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // While unhealthy, probe the control database so health comes back without traffic.
        ctx.run_interval(Duration::from_secs(1), |act, ctx| {
            if act.queue.healthy.load(Ordering::Acquire) {
                return;
            }
            let pool = act.queue.pool.clone();
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
                        act.queue.healthy.store(true, Ordering::Release);
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
    /// When the caller sent it (for the mailbox step's time).
    pub sent: Instant,
}

impl Handler<Append> for AuditWriter {
    type Result = ();

    fn handle(&mut self, msg: Append, ctx: &mut Context<Self>) {
        step("mailbox", msg.sent.elapsed());
        self.queue
            .buffer
            .push((msg.record, msg.reply, Instant::now()));
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
    #[error("the batch's seqs kept being taken (voided as unused); it was not appended")]
    SeqTaken,
    #[error("the audit log has no partition for the batch's sequence numbers")]
    NoPartition,
    #[error("the audit partition the batch was addressed to is gone")]
    PartitionGone,
}

impl BatchError {
    /// Whether the database refused a statement of the batch (a record it cannot
    /// store), as opposed to being unreachable.
    fn is_statement_error(&self) -> bool {
        matches!(self, BatchError::Db(e) if e.as_db_error().is_some())
    }

    /// Whether the batch surely did not commit: the database refused it, or it was never
    /// sent. Otherwise (the connection failed while it was in flight) it may have.
    fn surely_not_committed(&self) -> bool {
        self.is_statement_error() || matches!(self, BatchError::Pool(_))
    }
}

/// One step of the path from a caller's `append` to its durable answer, in
/// `interlock_audit_step_seconds{step}`: `mailbox` (to the writer's thread), `queued`
/// (waiting for a batch in flight), `checkout` (a pooled connection), `seqs` (a larger
/// batch's seq round trip), `encode` (chain hashes and columns), `insert` (the statement
/// and its commit).
/// `interlock_audit_wait_seconds` is the caller's whole wait; what it holds beyond the
/// steps is the reply's way back.
fn step(name: &'static str, took: Duration) {
    metrics::histogram!("interlock_audit_step_seconds", "step" => name).record(took.as_secs_f64());
}

/// This writer's own chain and its last record, as far as the writer knows for sure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Chain {
    id: uuid::Uuid,
    /// Whether `audit_chains` names it yet.
    registered: bool,
    /// The place of its last record (0: none yet).
    seq: i64,
    hash: Vec<u8>,
}

impl Chain {
    /// A new chain: a writer starts one when it starts, and again whenever it no longer
    /// knows for sure where its chain ends (a batch whose commit it could not see), so a
    /// chain never forks and never needs its head read back.
    fn fresh() -> Self {
        let id = uuid::Uuid::new_v4();
        Chain {
            id,
            registered: false,
            seq: 0,
            hash: chain_genesis(id).to_vec(),
        }
    }
}

/// Writes `records` as one batch; if the database refuses a statement of it, writes them
/// one by one so that only the records it cannot store fail. One result per record, and
/// the chain and partition to go on with.
async fn write_all(
    pool: &deadpool_postgres::Pool,
    records: Vec<AuditRecord>,
    chain: Chain,
    partition: Option<Partition>,
    span: i64,
) -> (Vec<Result<i64, BatchError>>, Chain, Option<Partition>) {
    let size = records.len();
    let mut at = Place { chain, partition };
    let taken = match records.as_slice() {
        [record] => match append_fresh(pool, record, &mut at).await {
            Fresh::Stored(seq) => return (vec![Ok(seq)], at.chain, at.partition),
            Fresh::Refused(e, seq) => {
                if let Some(seq) = seq {
                    void_own(pool, seq, &e).await;
                }
                return (vec![Err(e)], at.chain, at.partition);
            }
            Fresh::Failed(e) => {
                let chain = if e.surely_not_committed() {
                    at.chain
                } else {
                    Chain::fresh()
                };
                return (vec![Err(e)], chain, at.partition);
            }
            Fresh::Retry(seq) => Ok(vec![seq]),
            Fresh::TakeFirst => allocate(pool, size).await,
        },
        _ => allocate(pool, size).await,
    };
    let seqs = match taken {
        Ok(seqs) => seqs,
        Err(e) => {
            let mut results = vec![Err(e)];
            results.extend((1..size).map(|_| Err(BatchError::Failed)));
            return (results, at.chain, at.partition);
        }
    };
    match write_batch(pool, &records, &seqs, &mut at, span).await {
        Ok(seqs) => (seqs.into_iter().map(Ok).collect(), at.chain, at.partition),
        Err(e) if e.is_statement_error() && size == 1 => {
            void_own(pool, seqs[0], &e).await;
            (vec![Err(e)], at.chain, at.partition)
        }
        Err(e) if e.is_statement_error() => {
            tracing::warn!(error = %e, records = size, "audit batch refused; retrying record by record");
            let mut results = Vec::with_capacity(size);
            for (record, seq) in records.iter().zip(seqs) {
                match write_batch(pool, std::slice::from_ref(record), &[seq], &mut at, span).await {
                    Ok(seqs) => results.extend(seqs.into_iter().map(Ok)),
                    Err(e) => {
                        if e.is_statement_error() {
                            // Its seq will never hold it: say so now, not after a grace.
                            void_own(pool, seq, &e).await;
                        } else if !e.surely_not_committed() {
                            at.chain = Chain::fresh();
                        }
                        results.push(Err(e));
                    }
                }
            }
            (results, at.chain, at.partition)
        }
        Err(e) => {
            let chain = if e.surely_not_committed() {
                at.chain
            } else {
                Chain::fresh()
            };
            let mut results = vec![Err(e)];
            results.extend((1..size).map(|_| Err(BatchError::Failed)));
            (results, chain, at.partition)
        }
    }
}

/// Where a writer appends: its chain's end, and the partition it inserts into.
struct Place {
    chain: Chain,
    partition: Option<Partition>,
}

/// How long a batch keeps retrying while its seqs are taken or the log has no partition
/// for them, before its records are answered "audit unavailable": well inside the callers'
/// commit timeout.
const RETRY_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// Takes `n` seqs from `audit_records_seq`, in order. Taken before the insert, so that a
/// batch that must go in again (or record by record) keeps its seqs and leaves no hole.
async fn allocate(pool: &deadpool_postgres::Pool, n: usize) -> Result<Vec<i64>, BatchError> {
    let asked = Instant::now();
    let client = pool.get().await?;
    step("checkout", asked.elapsed());
    let asked = Instant::now();
    let take = client
        .prepare_cached("SELECT nextval('audit_records_seq') FROM generate_series(1, $1::bigint)")
        .await?;
    let mut seqs: Vec<i64> = client
        .query(&take, &[&(n as i64)])
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    seqs.sort_unstable();
    step("seqs", asked.elapsed());
    Ok(seqs)
}

/// Fills `seq`, which this writer took for a record the database refused, with a void.
/// Best effort: should it fail, the ledger voids the seq after its grace.
async fn void_own(pool: &deadpool_postgres::Pool, seq: i64, why: &BatchError) {
    let record = AuditRecord::void(seq, &format!(
        "the record given this seq could not be stored ({why}); its caller was answered audit unavailable"
    ));
    let hash = void_hash(seq, &record).to_vec();
    let written = async {
        let client = pool.get().await?;
        client
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
                    &record.outcome,
                    &GENESIS.to_vec(),
                    &hash,
                ],
            )
            .await?;
        Ok::<_, BatchError>(())
    }
    .await;
    if let Err(e) = written {
        tracing::warn!(seq, error = %e, "could not void an audit seq; the ledger will");
    }
}

/// Appends `records` at `seqs` to the chain of `at` as one statement: no other writer's
/// batch is waited for or checked against. Returns their seqs, and moves `at` to the
/// chain's new end (and the partition it went to). Should the batch run past the last
/// partition of `audit_records` (the gateway's maintenance creates them ahead), the writer
/// creates the next partitions itself, `span` records each, and appends again; should a
/// void have taken its seqs (it was slower than the ledger's grace), it takes new ones;
/// should the partition it addressed be gone, it goes through the parent.
async fn write_batch(
    pool: &deadpool_postgres::Pool,
    records: &[AuditRecord],
    seqs: &[i64],
    at: &mut Place,
    span: i64,
) -> Result<Vec<i64>, BatchError> {
    let asked = Instant::now();
    let client = pool.get().await?;
    step("checkout", asked.elapsed());
    register(&client, &mut at.chain).await?;
    if !at.partition.as_ref().is_some_and(|p| p.holds(seqs)) {
        let next = target::lookup(&client, seqs).await?;
        move_to(pool, at, next);
    }
    let kind = Insert::of(records.len());
    let mut insert = match client
        .prepare_cached(kind.sql_for(at.partition.as_ref()))
        .await
    {
        Err(e) if at.partition.is_some() && target::partition_gone(&e) => {
            forget_partition(pool, at);
            client.prepare_cached(kind.parent()).await?
        }
        prepared => prepared?,
    };
    let started = std::time::Instant::now();
    loop {
        match append(&client, &insert, kind, records, seqs, &at.chain).await {
            Err(BatchError::SeqTaken) if started.elapsed() < RETRY_BUDGET => {
                tracing::warn!(
                    "an audit batch's seqs were voided meanwhile; appending it at new ones"
                );
                drop(client);
                let seqs = allocate(pool, records.len()).await?;
                return Box::pin(write_batch(pool, records, &seqs, at, span)).await;
            }
            Err(BatchError::NoPartition) if started.elapsed() < RETRY_BUDGET => {
                let upto = seqs.last().copied().unwrap_or(0);
                let made = client
                    .execute("SELECT audit_extend_partitions($1, $2)", &[&upto, &span])
                    .await?;
                tracing::warn!(
                    upto,
                    made,
                    "the audit log ran past its last partition; created the next"
                );
            }
            Err(BatchError::PartitionGone) if at.partition.is_some() => {
                forget_partition(pool, at);
                insert = client.prepare_cached(kind.parent()).await?;
            }
            Ok(end) => {
                at.chain.seq = end.0;
                at.chain.hash = end.1;
                return Ok(seqs.to_vec());
            }
            Err(e) => return Err(e),
        }
    }
}

/// Names the chain in `audit_chains` before its first record.
async fn register(
    client: &deadpool_postgres::Client,
    chain: &mut Chain,
) -> Result<(), tokio_postgres::Error> {
    if !chain.registered {
        let register = client
            .prepare_cached(
                "INSERT INTO audit_chains (chain, writer)
                 VALUES ($1, coalesce(nullif(current_setting('application_name'), ''), 'interlock'))
                 ON CONFLICT (chain) DO NOTHING",
            )
            .await?;
        client.execute(&register, &[&chain.id]).await?;
        chain.registered = true;
    }
    Ok(())
}

/// What became of a batch of one whose insert took its own seq.
enum Fresh {
    /// Stored, durably, at this seq.
    Stored(i64),
    /// Not stored, and the seq its insert took is known: it goes in again at that seq the
    /// way a batch whose seqs were taken first does (its partition was not the one the
    /// writer knew, or there was none yet), so no hole is left.
    Retry(i64),
    /// Not stored and no seq taken: it goes the way a batch whose seqs are taken first does.
    TakeFirst,
    /// The database refused the record; the seq its insert took, if it took one.
    Refused(BatchError, Option<i64>),
    /// Not stored as far as the writer can tell (the connection failed, perhaps mid-commit):
    /// a seq it took stays missing until the ledger voids it.
    Failed(BatchError),
}

/// Appends a batch of one in one round trip: the insert takes the record's seq itself
/// (`nextval` in the statement, returned), into the partition the writer's last batch went
/// to. Should the insert fail, the seq it took is this session's `currval`: read back, it
/// is kept (the record goes in again at it) or voided at once (the record was refused),
/// as with seqs taken first. (A statement that failed before taking one leaves `currval`
/// at a seq this session already used: going in again there is refused as taken and takes
/// new seqs, and its void is a no-op.)
async fn append_fresh(
    pool: &deadpool_postgres::Pool,
    record: &AuditRecord,
    at: &mut Place,
) -> Fresh {
    let asked = Instant::now();
    let client = match pool.get().await {
        Ok(client) => client,
        Err(e) => return Fresh::Failed(e.into()),
    };
    step("checkout", asked.elapsed());
    if let Err(e) = register(&client, &mut at.chain).await {
        return Fresh::Failed(e.into());
    }
    let insert = match client
        .prepare_cached(Insert::OneFresh.sql_for(at.partition.as_ref()))
        .await
    {
        Ok(insert) => insert,
        Err(e) if at.partition.is_some() && target::partition_gone(&e) => {
            forget_partition(pool, at);
            return Fresh::TakeFirst;
        }
        Err(e) => return Fresh::Failed(e.into()),
    };
    let encoding = Instant::now();
    let chained = link(std::slice::from_ref(record), &at.chain);
    let Some(l) = chained.first() else {
        return Fresh::Failed(BatchError::Failed);
    };
    step("encode", encoding.elapsed());
    let inserting = Instant::now();
    let stored = client
        .query(&insert, &one_row(&at.chain.id, None, record, l))
        .await;
    step("insert", inserting.elapsed());
    match stored {
        Ok(rows) => {
            let Some(Ok(seq)) = rows.first().map(|r| r.try_get::<_, i64>(0)) else {
                return Fresh::Failed(BatchError::Failed);
            };
            at.chain.seq = l.seq;
            at.chain.hash = l.hash.clone();
            if !at.partition.as_ref().is_some_and(|p| p.holds(&[seq])) {
                // The next batch's partition (after the answer is durable; once per partition).
                let next = target::lookup(&client, &[seq]).await.ok().flatten();
                move_to(pool, at, next);
            }
            Fresh::Stored(seq)
        }
        Err(e) if e.as_db_error().is_none() => Fresh::Failed(e.into()),
        Err(e) => {
            let taken = client
                .query_one("SELECT currval('audit_records_seq')", &[])
                .await
                .ok()
                .and_then(|r| r.try_get::<_, i64>(0).ok());
            let elsewhere = seq_taken(&e) || no_partition(&e) || target::partition_gone(&e);
            if elsewhere {
                forget_partition(pool, at);
            }
            match (elsewhere, taken) {
                (true, Some(seq)) => Fresh::Retry(seq),
                (true, None) => Fresh::TakeFirst,
                (false, seq) => Fresh::Refused(e.into(), seq),
            }
        }
    }
}

/// The partition `at` addressed is gone (dropped, renamed): the batch goes through the
/// parent.
fn forget_partition(pool: &deadpool_postgres::Pool, at: &mut Place) {
    tracing::warn!(
        "the audit partition this writer addressed is gone; appending through the parent"
    );
    move_to(pool, at, None);
}

/// Moves `at` to the partition `next` (none: the parent). The inserts prepared for the
/// partition it leaves are closed on every connection of the pool: the log fills one
/// partition after another, and each one's statements would otherwise stay prepared on
/// every control connection for as long as it lives. (Another writer still in that
/// partition prepares them again; a batch running one keeps it until it ends.)
fn move_to(pool: &deadpool_postgres::Pool, at: &mut Place, next: Option<Partition>) {
    if let Some(left) = at.partition.take().filter(|p| Some(p) != next.as_ref()) {
        let caches = &pool.manager().statement_caches;
        for insert in left.inserts() {
            caches.remove(insert, &[]);
        }
    }
    at.partition = next;
}

/// Appends `records` at `seqs` after the end of `chain` as one statement in its own
/// implicit transaction. The answer arrives after the commit (the server sends
/// ReadyForQuery only once the implicit transaction committed, and the driver waits for
/// it), so a returned seq is durable. Returns the chain's new end.
async fn append(
    client: &deadpool_postgres::Client,
    insert: &tokio_postgres::Statement,
    kind: Insert,
    records: &[AuditRecord],
    seqs: &[i64],
    chain: &Chain,
) -> Result<(i64, Vec<u8>), BatchError> {
    let started = Instant::now();
    let chained = link(records, chain);
    let (inserted, started) = match (records, seqs, chained.as_slice(), kind.rows()) {
        ([record], [seq], [l], _) => {
            step("encode", started.elapsed());
            let started = Instant::now();
            (
                insert_one(client, insert, record, *seq, l, chain.id).await,
                started,
            )
        }
        (_, _, _, Some(bound)) => {
            let params = rows(&chain.id, records, seqs, &chained, bound);
            step("encode", started.elapsed());
            let started = Instant::now();
            (client.execute(insert, &params).await, started)
        }
        (_, _, _, None) => {
            let columns = Columns::of(records, seqs, &chained);
            step("encode", started.elapsed());
            let started = Instant::now();
            (columns.insert(client, insert, chain.id).await, started)
        }
    };
    step("insert", started.elapsed());
    match inserted {
        Ok(n) if n == records.len() as u64 => {}
        Ok(_) => return Err(BatchError::Failed),
        Err(e) if seq_taken(&e) => return Err(BatchError::SeqTaken),
        Err(e) if no_partition(&e) => return Err(BatchError::NoPartition),
        Err(e) if target::partition_gone(&e) => return Err(BatchError::PartitionGone),
        Err(e) => return Err(e.into()),
    }
    Ok(chained.last().map_or_else(
        || (chain.seq, chain.hash.clone()),
        |l| (l.seq, l.hash.clone()),
    ))
}

/// A batch of one, bound straight from its record (no column arrays to build).
async fn insert_one(
    client: &deadpool_postgres::Client,
    insert: &tokio_postgres::Statement,
    r: &AuditRecord,
    seq: i64,
    l: &Link,
    chain: uuid::Uuid,
) -> Result<u64, tokio_postgres::Error> {
    client
        .execute(insert, &one_row(&chain, Some(&seq), r, l))
        .await
}

type Param<'a> = &'a (dyn tokio_postgres::types::ToSql + Sync);

/// The parameters of a batch of one, in the insert's column order; without `seq` for the
/// insert that takes its own.
fn one_row<'a>(
    chain: &'a uuid::Uuid,
    seq: Option<&'a i64>,
    r: &'a AuditRecord,
    l: &'a Link,
) -> Vec<Param<'a>> {
    let mut params: Vec<Param<'a>> = vec![chain];
    push_row(&mut params, seq, r, l);
    params
}

/// The parameters of a batch bound as `bound` rows: the chain, then each record's row, then
/// rows of NULLs (whose NULL seq the insert leaves out) up to `bound`.
fn rows<'a>(
    chain: &'a uuid::Uuid,
    records: &'a [AuditRecord],
    seqs: &'a [i64],
    chained: &'a [Link],
    bound: usize,
) -> Vec<Param<'a>> {
    let mut params: Vec<Param<'a>> = Vec::with_capacity(1 + PADDING.len() * bound);
    params.push(chain);
    for ((r, seq), l) in records.iter().zip(seqs).zip(chained) {
        push_row(&mut params, Some(seq), r, l);
    }
    for _ in records.len()..bound {
        params.extend(PADDING);
    }
    params
}

/// A row that holds no record: NULL in every column, its NULL seq left out by the insert.
const PADDING: [Param<'static>; target::ROW_WIDTH] = [&Null; target::ROW_WIDTH];

/// SQL NULL as a parameter of any type.
#[derive(Debug)]
struct Null;

impl tokio_postgres::types::ToSql for Null {
    fn to_sql(
        &self,
        _: &tokio_postgres::types::Type,
        _: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        Ok(tokio_postgres::types::IsNull::Yes)
    }

    fn accepts(_: &tokio_postgres::types::Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// A call's outcome, stored as its name (`text`).
impl tokio_postgres::types::ToSql for RecordOutcome {
    fn to_sql(
        &self,
        ty: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        self.as_str().to_sql(ty, out)
    }

    fn accepts(ty: &tokio_postgres::types::Type) -> bool {
        <&str as tokio_postgres::types::ToSql>::accepts(ty)
    }

    tokio_postgres::types::to_sql_checked!();
}

/// One record's parameters after the chain, in the insert's column order; without `seq`
/// for the insert that takes its own.
fn push_row<'a>(
    params: &mut Vec<Param<'a>>,
    seq: Option<&'a i64>,
    r: &'a AuditRecord,
    l: &'a Link,
) {
    if let Some(seq) = seq {
        params.push(seq);
    }
    params.extend([
        &l.seq as Param<'a>,
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
        &r.outcome,
        &r.row_count,
        &r.duration_us,
        &r.cache_hit,
        &r.approval_id,
        &l.prev,
        &l.hash,
        &r.statement_sha256,
    ]);
}

/// Whether a void took one of the batch's seqs (the primary key of a partition of
/// `audit_records`, `audit_records_<lower>_pkey`, refused it): the batch took longer than
/// the hole grace of `control::ledger`, and simply goes in again with new seqs.
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

/// One record's place in the writer's chain, previous hash and own hash.
struct Link {
    seq: i64,
    prev: Vec<u8>,
    hash: Vec<u8>,
}

fn link(records: &[AuditRecord], chain: &Chain) -> Vec<Link> {
    let (mut seq, mut prev) = (chain.seq, chain.hash.clone());
    records
        .iter()
        .map(|r| {
            seq += 1;
            let hash = chain_hash(&prev, chain.id, seq, r).to_vec();
            Link {
                seq,
                prev: std::mem::replace(&mut prev, hash.clone()),
                hash,
            }
        })
        .collect()
}

/// A batch as one array per column of `audit_records`, in the insert's column order.
struct Columns<'a> {
    seq: &'a [i64],
    chain_seq: Vec<i64>,
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
    outcome: Vec<RecordOutcome>,
    row_count: Vec<Option<i64>>,
    duration_us: Vec<i64>,
    cache_hit: Vec<bool>,
    approval_id: Vec<Option<uuid::Uuid>>,
    prev_hash: Vec<&'a [u8]>,
    hash: Vec<&'a [u8]>,
    statement_sha256: Vec<Option<&'a str>>,
}

impl<'a> Columns<'a> {
    fn of(records: &'a [AuditRecord], seqs: &'a [i64], chained: &'a [Link]) -> Self {
        Columns {
            seq: seqs,
            chain_seq: chained.iter().map(|l| l.seq).collect(),
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
            outcome: records.iter().map(|r| r.outcome).collect(),
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
        chain: uuid::Uuid,
    ) -> Result<u64, tokio_postgres::Error> {
        client
            .execute(
                insert,
                &[
                    &chain,
                    &self.seq,
                    &self.chain_seq,
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
                ],
            )
            .await
    }
}
