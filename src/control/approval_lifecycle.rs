//! The approvals table as its lifecycle moves it: an approver's decision (inside the
//! caller's transaction, under the row lock), the claim and end of an execution, expiry,
//! and the recovery of executions whose gateway died. The rules of each move live in the
//! approval state machine (`interlock_actors::approval`) and the runner; only the SQL is
//! here.

use deadpool_postgres::GenericClient;
use serde_json::Value;
use uuid::Uuid;

use super::{ControlError, ControlPool};

/// An approval as a decision sees it, locked for the rest of the transaction.
#[derive(Debug, Clone)]
pub struct DecisionRow {
    pub source_id: String,
    pub requester_id: Uuid,
    pub state: String,
    pub approvals_required: i32,
    pub expired: bool,
    /// Whether the approver is scoped to the approval's source.
    pub in_scope: bool,
    pub approvals_so_far: i64,
    pub already_decided_by_approver: bool,
}

/// Locks approval `id` for a decision by `approver` (`SELECT … FOR UPDATE`).
pub async fn lock_for_decision(
    tx: &impl GenericClient,
    id: Uuid,
    approver: Uuid,
) -> Result<Option<DecisionRow>, ControlError> {
    let row = tx
        .query_opt(
            "SELECT a.source_id, a.requester_id, a.state, a.approvals_required, a.expires_at <= now(),
                    EXISTS (SELECT 1 FROM approver_scopes s WHERE s.identity_id = $2 AND s.source_id = a.source_id),
                    (SELECT count(*) FROM approval_decisions d WHERE d.approval_id = a.id AND d.decision = 'approve'),
                    EXISTS (SELECT 1 FROM approval_decisions d WHERE d.approval_id = a.id AND d.approver_id = $2)
               FROM approvals a WHERE a.id = $1 FOR UPDATE",
            &[&id, &approver],
        )
        .await?;
    Ok(row.map(|r| DecisionRow {
        source_id: r.get(0),
        requester_id: r.get(1),
        state: r.get(2),
        approvals_required: r.get(3),
        expired: r.get(4),
        in_scope: r.get(5),
        approvals_so_far: r.get(6),
        already_decided_by_approver: r.get(7),
    }))
}

/// A pending approval whose time ran out becomes `expired`.
pub async fn expire_pending(tx: &impl GenericClient, id: Uuid) -> Result<(), ControlError> {
    tx.execute(
        "UPDATE approvals SET state = 'expired' WHERE id = $1 AND state = 'pending'",
        &[&id],
    )
    .await?;
    Ok(())
}

/// Records one approver's decision (`approve` or `reject`) with its reason.
pub async fn record_decision(
    tx: &impl GenericClient,
    id: Uuid,
    approver: Uuid,
    decision: &str,
    reason: &str,
    trace_context: Option<&str>,
) -> Result<(), ControlError> {
    tx.execute(
        "INSERT INTO approval_decisions (approval_id, approver_id, decision, reason, trace_context)
         VALUES ($1, $2, $3, $4, $5)",
        &[&id, &approver, &decision, &reason, &trace_context],
    )
    .await?;
    Ok(())
}

/// Moves approval `id` to `state` (the state machine decided the move).
pub async fn set_state(tx: &impl GenericClient, id: Uuid, state: &str) -> Result<(), ControlError> {
    tx.execute(
        "UPDATE approvals SET state = $2 WHERE id = $1",
        &[&id, &state],
    )
    .await?;
    Ok(())
}

/// An approved write claimed for execution by one gateway instance.
#[derive(Debug, Clone)]
pub struct ClaimedRow {
    pub source_id: String,
    pub requester_id: Uuid,
    pub requester: String,
    pub statement: String,
    /// The most rows the write may affect (the approved effect); `None`: unbounded.
    pub max_rows: Option<i64>,
    /// The digest of the keys of the rows the preview showed changing, which the write must
    /// change exactly; `None` when the preview could not image rows.
    pub preview_keys: Option<String>,
    /// The facts of the queuing call.
    pub call_facts: Option<serde_json::Value>,
    /// `write`, or `read` for a read a policy held for approval.
    pub action: Option<String>,
    /// The traceparents of the queuing call and of each decision that had one.
    pub trace_contexts: Vec<String>,
    /// Where `max_rows` came from (`estimate`, `dry_run`, `approver`, `measured`).
    pub bound_source: Option<String>,
}

/// Claims approved write `id` for `instance`: only one claim of an approval succeeds.
pub async fn claim(
    pool: &ControlPool,
    id: Uuid,
    instance: i32,
) -> Result<Option<ClaimedRow>, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            "UPDATE approvals a SET state = 'executing', executing_by = $2, executing_at = now()
              FROM identities i
             WHERE a.id = $1 AND a.state = 'approved' AND i.id = a.requester_id
             RETURNING a.source_id, a.requester_id, i.name, a.statement, a.max_rows, a.preview_keys,
                       a.call_facts, a.touches ->> 'action',
                       array_remove(a.trace_context || ARRAY(
                           SELECT d.trace_context FROM approval_decisions d
                            WHERE d.approval_id = a.id ORDER BY d.decided_at), NULL),
                       a.bound_source",
            &[&id, &instance],
        )
        .await?;
    Ok(row.map(|r| ClaimedRow {
        source_id: r.get(0),
        requester_id: r.get(1),
        requester: r.get(2),
        statement: r.get(3),
        max_rows: r.get(4),
        preview_keys: r.get(5),
        call_facts: r.get(6),
        action: r.get(7),
        trace_contexts: r.get(8),
        bound_source: r.get(9),
    }))
}

/// Stores the preview of approval `id`; unless a bound was set already, the bound becomes
/// `default_bound` (the previewed or estimated row count). The keys the write must change
/// are always the latest preview's (`None`: it imaged no rows), so approvers approve the
/// rows they were last shown.
pub async fn store_preview(
    pool: &ControlPool,
    id: Uuid,
    preview: &Value,
    default_bound: Option<(i64, BoundSource)>,
    keys: Option<&str>,
) -> Result<(), ControlError> {
    let (bound, source) = default_bound.unzip();
    let source = source.map(BoundSource::as_str);
    pool.get()
        .await?
        .execute(
            "UPDATE approvals SET preview = $2,
                    bound_source = CASE WHEN max_rows IS NULL AND $3::bigint IS NOT NULL
                                        THEN $5 ELSE bound_source END,
                    max_rows = coalesce(max_rows, $3), preview_keys = $4
              WHERE id = $1 AND state = 'pending'",
            &[&id, preview, &bound, &keys, &source],
        )
        .await?;
    Ok(())
}

/// Where an approval's bound came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundSource {
    /// The planner's estimate (an `explain` preview): a statistic, so a run that exceeds it
    /// is handed back to the approvers rather than failed.
    Estimate,
    /// A rolled-back run's count (a `dry_run` preview).
    DryRun,
    /// The count of an approved run that exceeded an estimate.
    Measured,
}

impl BoundSource {
    pub fn as_str(self) -> &'static str {
        match self {
            BoundSource::Estimate => "estimate",
            BoundSource::DryRun => "dry_run",
            BoundSource::Measured => "measured",
        }
    }
}

/// An approver's bound on the rows the write may affect (while it is pending).
pub async fn set_bound(
    client: &impl GenericClient,
    id: Uuid,
    max_rows: i64,
) -> Result<(), ControlError> {
    client
        .execute(
            "UPDATE approvals SET max_rows = $2, bound_source = 'approver' WHERE id = $1",
            &[&id, &max_rows],
        )
        .await?;
    Ok(())
}

/// How a claimed write ended.
#[derive(Debug, Clone)]
pub struct Ended {
    /// `executed` or `failed`.
    pub state: &'static str,
    /// Rows changed in all tables (PostgreSQL's count, never the command tag).
    pub rows_affected: Option<i64>,
    /// Rows changed per table (`{"schema.table": n}`).
    pub rows_changed: Option<Value>,
    /// The statement's own `RETURNING` rows, masked.
    pub result: Option<Value>,
    pub error: Option<String>,
}

/// Ends the execution of claimed approval `id` as `ended` says.
pub async fn finish(pool: &ControlPool, id: Uuid, ended: &Ended) -> Result<(), ControlError> {
    let client = pool.get().await?;
    client
        .execute(
            "UPDATE approvals SET state = $2, executed_at = now(), rows_affected = $3, result = $4,
                    error = $5, rows_changed = $6
              WHERE id = $1 AND state = 'executing'",
            &[
                &id,
                &ended.state,
                &ended.rows_affected,
                &ended.result,
                &ended.error,
                &ended.rows_changed,
            ],
        )
        .await?;
    Ok(())
}

/// Hands approval `id` back to its approvers: an approved run changed `measured` rows, more
/// than the planner's estimate it was bound to, and was rolled back. It is pending again,
/// bound to the measured count (which it may not exceed), its decisions cleared (they
/// approved another effect) and kept in `handbacks`. Returns its source and action, when
/// this call made that move.
pub async fn hand_back(
    pool: &ControlPool,
    id: Uuid,
    measured: i64,
) -> Result<Option<(String, &'static str, Option<i64>)>, ControlError> {
    let row = pool
        .get()
        .await?
        .query_opt(
            "WITH d AS (
               DELETE FROM approval_decisions WHERE approval_id = $1
               RETURNING approver_id, decision, reason, decided_at)
             UPDATE approvals a
                SET state = 'pending', max_rows = $2, bound_source = 'measured',
                    executing_by = NULL, executing_at = NULL,
                    handbacks = a.handbacks || jsonb_build_array(jsonb_build_object(
                        'at', now(), 'estimated', a.max_rows, 'measured', $2::bigint,
                        'decisions', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                            'approver_id', d.approver_id, 'decision', d.decision,
                            'reason', d.reason, 'decided_at', d.decided_at)), '[]') FROM d)))
              WHERE a.id = $1 AND a.state = 'executing'
              RETURNING a.source_id, a.touches ->> 'action',
                        (a.handbacks -> -1 ->> 'estimated')::bigint",
            &[&id, &measured],
        )
        .await?;
    Ok(row.map(|r| (r.get(0), action_of(r.get::<_, Option<&str>>(1)), r.get(2))))
}

/// What an approval holds: `write`, or `read` for a read a policy held (its audit records
/// carry it, from the queuing call to the last lifecycle record).
pub fn action_of(touches_action: Option<&str>) -> &'static str {
    if touches_action == Some("read") {
        "read"
    } else {
        "write"
    }
}

/// Pending approvals whose time ran out become `expired`; returns their ids, sources and
/// actions.
pub async fn expire_due(
    pool: &ControlPool,
) -> Result<Vec<(Uuid, String, &'static str)>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "UPDATE approvals SET state = 'expired'
              WHERE state = 'pending' AND expires_at <= now()
             RETURNING id, source_id, touches ->> 'action'",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), r.get(1), action_of(r.get::<_, Option<&str>>(2))))
        .collect())
}

/// Approved writes whose last decision is older than a few seconds: their hand-off to a
/// queue may have been lost.
pub async fn stale_approved(pool: &ControlPool) -> Result<Vec<Uuid>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT a.id FROM approvals a
              WHERE a.state = 'approved'
                AND (SELECT max(decided_at) FROM approval_decisions d WHERE d.approval_id = a.id)
                    < now() - interval '5 seconds'",
            &[],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Every approved write, oldest first.
pub async fn approved(pool: &ControlPool) -> Result<Vec<Uuid>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT id FROM approvals WHERE state = 'approved' ORDER BY created_at",
            &[],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Executions claimed by another instance than `instance`: id and claiming instance.
pub async fn executing_elsewhere(
    client: &impl GenericClient,
    instance: i32,
) -> Result<Vec<(Uuid, Option<i32>)>, ControlError> {
    let rows = client
        .query(
            "SELECT id, executing_by FROM approvals WHERE state = 'executing' AND executing_by <> $1",
            &[&instance],
        )
        .await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// Why an execution ended without an outcome.
#[derive(Debug, Clone, Copy)]
pub enum LostExecution {
    /// The gateway executing it died.
    GatewayDied,
    /// The execution itself failed unexpectedly (it panicked) on a live gateway.
    Abandoned,
}

impl LostExecution {
    fn error(self) -> &'static str {
        match self {
            LostExecution::GatewayDied => {
                "the gateway stopped while executing this write; verify by hand whether it ran"
            }
            LostExecution::Abandoned => {
                "executing this write failed unexpectedly before its outcome was known; verify by hand whether it ran"
            }
        }
    }
}

/// An execution that ended without an outcome becomes `outcome_unknown` (never re-run);
/// its source and action when this call made that move.
pub async fn mark_outcome_unknown(
    client: &impl GenericClient,
    id: Uuid,
    why: LostExecution,
) -> Result<Option<(String, &'static str)>, ControlError> {
    let row = client
        .query_opt(
            "UPDATE approvals SET state = 'outcome_unknown', error = $2
              WHERE id = $1 AND state = 'executing'
              RETURNING source_id, touches ->> 'action'",
            &[&id, &why.error()],
        )
        .await?;
    Ok(row.map(|r| (r.get(0), action_of(r.get::<_, Option<&str>>(1)))))
}
