//! Approval records: writes held for human approvers.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{ControlError, ControlPool};

/// What a queued write needs to be recorded.
#[derive(Debug, Clone)]
pub struct NewApproval {
    pub source_id: String,
    pub requester_id: Uuid,
    pub statement: String,
    pub fingerprint: String,
    /// Tables and columns the write touches, and the action.
    pub touches: Value,
    pub approvals_required: u32,
    pub ttl_secs: u32,
    /// The facts of the queuing call, when its source has conditional rules.
    pub call_facts: Option<Value>,
    /// The W3C traceparent of the queuing call's span, when it was traced (the execution's
    /// span links to it).
    pub trace_context: Option<String>,
    /// The MCP task the caller waits on, when it asked for one: recorded with the approval
    /// (same id); the approval expires when the task's wait ends if that comes first.
    pub task: Option<NewTask>,
}

/// The task a held call's caller waits on.
#[derive(Debug, Clone, Copy)]
pub struct NewTask {
    /// How long the caller waits for approvers (milliseconds).
    pub wait_ms: i64,
    /// How long the task is kept from its creation (milliseconds, at least `wait_ms`).
    pub ttl_ms: i64,
}

/// A queued approval as recorded.
#[derive(Debug, Clone, Copy)]
pub struct Enqueued {
    pub id: Uuid,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
}

/// Records a pending approval (and its task, in the same statement); returns its id, time
/// and expiry. The queue never deduplicates: two identical writes are two approvals.
pub async fn enqueue(pool: &ControlPool, a: &NewApproval) -> Result<Enqueued, ControlError> {
    let client = pool.get().await?;
    let id = Uuid::new_v4();
    let required = i32::try_from(a.approvals_required.clamp(1, 5)).unwrap_or(1);
    let ttl = f64::from(a.ttl_secs);
    if let Some(task) = a.task {
        let row = client
            .query_one(
                "WITH a AS (
                   INSERT INTO approvals (id, source_id, requester_id, statement, fingerprint, touches, state,
                                          approvals_required, expires_at, call_facts, trace_context)
                   VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7,
                           now() + least(make_interval(secs => $8), make_interval(secs => $11::bigint / 1000.0)),
                           $9, $10)
                   RETURNING id, requester_id, created_at, expires_at),
                 t AS (
                   INSERT INTO mcp_tasks (id, requester_id, approval_id, tool, created_at, ttl_ms, expires_at)
                   SELECT id, requester_id, id, 'interlock_query', created_at, $12::bigint,
                          created_at + make_interval(secs => $12::bigint / 1000.0) FROM a)
                 SELECT created_at, expires_at FROM a",
                &[&id, &a.source_id, &a.requester_id, &a.statement, &a.fingerprint, &a.touches, &required, &ttl, &a.call_facts, &a.trace_context, &task.wait_ms, &task.ttl_ms],
            )
            .await?;
        return Ok(Enqueued {
            id,
            created_at: row.get(0),
            expires_at: row.get(1),
        });
    }
    let row = client
        .query_one(
            "INSERT INTO approvals (id, source_id, requester_id, statement, fingerprint, touches, state,
                                    approvals_required, expires_at, call_facts, trace_context)
             VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, now() + make_interval(secs => $8), $9, $10)
             RETURNING expires_at",
            &[&id, &a.source_id, &a.requester_id, &a.statement, &a.fingerprint, &a.touches, &required, &ttl, &a.call_facts, &a.trace_context],
        )
        .await?;
    // The approval's creation time is the transaction's now(), as `expires_at` was computed.
    let expires_at: DateTime<Utc> = row.get(0);
    Ok(Enqueued {
        id,
        created_at: expires_at - chrono::Duration::seconds(i64::from(a.ttl_secs)),
        expires_at,
    })
}

/// A decision on an approval.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ApprovalDecision {
    pub approver: String,
    pub decision: String,
    pub reason: String,
    pub decided_at: DateTime<Utc>,
}

/// An approval as stored, with its decisions.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Approval {
    pub id: Uuid,
    pub source_id: String,
    pub requester_id: Uuid,
    pub requester: String,
    pub statement: String,
    pub fingerprint: String,
    pub touches: Value,
    pub state: String,
    pub approvals_required: i32,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub executed_at: Option<DateTime<Utc>>,
    pub rows_affected: Option<i64>,
    /// Rows the write changed per table, as PostgreSQL counted them.
    pub rows_changed: Option<Value>,
    pub result: Option<Value>,
    pub error: Option<String>,
    /// The effect preview (`approvals::preview`), when it has been computed.
    pub preview: Option<Value>,
    /// The most rows the write may affect when it runs.
    pub max_rows: Option<i64>,
    /// Where `max_rows` came from: `estimate`, `dry_run`, `approver` or `measured`.
    pub bound_source: Option<String>,
    /// Each time an approved run exceeded an estimated bound and was handed back.
    pub handbacks: Value,
    pub decisions: Vec<ApprovalDecision>,
    /// The facts of the queuing call (never shown: they hold the token's claims).
    #[serde(skip)]
    pub call_facts: Option<Value>,
}

pub(crate) const APPROVAL_COLUMNS: &str = "a.id, a.source_id, a.requester_id, i.name AS requester, a.statement,
    a.fingerprint, a.touches, a.state, a.approvals_required, a.created_at, a.expires_at, a.executed_at,
    a.rows_affected, a.rows_changed, a.result, a.error, a.preview, a.max_rows, a.call_facts,
    a.bound_source, a.handbacks";

pub(crate) fn approval_from_row(r: &tokio_postgres::Row) -> Approval {
    Approval {
        id: r.get("id"),
        source_id: r.get("source_id"),
        requester_id: r.get("requester_id"),
        requester: r.get("requester"),
        statement: r.get("statement"),
        fingerprint: r.get("fingerprint"),
        touches: r.get("touches"),
        state: r.get("state"),
        approvals_required: r.get("approvals_required"),
        created_at: r.get("created_at"),
        expires_at: r.get("expires_at"),
        executed_at: r.get("executed_at"),
        rows_affected: r.get("rows_affected"),
        rows_changed: r.get("rows_changed"),
        result: r.get("result"),
        error: r.get("error"),
        preview: r.get("preview"),
        max_rows: r.get("max_rows"),
        bound_source: r.get("bound_source"),
        handbacks: r.get("handbacks"),
        decisions: Vec::new(),
        call_facts: r.get("call_facts"),
    }
}

/// One approval with its decisions; `requester` restricts it to that identity's own.
pub async fn get(
    pool: &ControlPool,
    id: Uuid,
    requester: Option<Uuid>,
) -> Result<Option<Approval>, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            &format!(
                "SELECT {APPROVAL_COLUMNS} FROM approvals a JOIN identities i ON i.id = a.requester_id
                  WHERE a.id = $1 AND ($2::uuid IS NULL OR a.requester_id = $2)"
            ),
            &[&id, &requester],
        )
        .await?;
    let Some(row) = row else { return Ok(None) };
    let mut approval = approval_from_row(&row);
    approval.decisions = decisions(&client, id).await?;
    Ok(Some(approval))
}

pub(crate) async fn decisions(
    client: &tokio_postgres::Client,
    id: Uuid,
) -> Result<Vec<ApprovalDecision>, ControlError> {
    let rows = client
        .query(
            "SELECT i.name, d.decision, d.reason, d.decided_at FROM approval_decisions d
               JOIN identities i ON i.id = d.approver_id WHERE d.approval_id = $1 ORDER BY d.decided_at",
            &[&id],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| ApprovalDecision {
            approver: r.get(0),
            decision: r.get(1),
            reason: r.get(2),
            decided_at: r.get(3),
        })
        .collect())
}

/// Approvals newest first, filtered by state and source; `scopes` (approvers) restricts the
/// sources; `before` pages by creation time.
pub async fn list(
    pool: &ControlPool,
    state: Option<&str>,
    source: Option<&str>,
    scopes: Option<&[String]>,
    before: Option<DateTime<Utc>>,
    limit: i64,
) -> Result<Vec<Approval>, ControlError> {
    let client = pool.get().await?;
    let scopes: Option<Vec<String>> = scopes.map(<[String]>::to_vec);
    let rows = client
        .query(
            &format!(
                "SELECT {APPROVAL_COLUMNS} FROM approvals a JOIN identities i ON i.id = a.requester_id
                  WHERE ($1::text IS NULL OR a.state = $1)
                    AND ($2::text IS NULL OR a.source_id = $2)
                    AND ($3::text[] IS NULL OR a.source_id = ANY($3))
                    AND ($4::timestamptz IS NULL OR a.created_at < $4)
                  ORDER BY a.created_at DESC LIMIT $5"
            ),
            &[&state, &source, &scopes, &before, &limit],
        )
        .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let mut a = approval_from_row(r);
        a.decisions = decisions(&client, a.id).await?;
        out.push(a);
    }
    Ok(out)
}

/// How many approvals are in each state (for the `interlock_approvals{state}` gauge).
pub async fn count_by_state(pool: &ControlPool) -> Result<Vec<(String, i64)>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query("SELECT state, count(*) FROM approvals GROUP BY state", &[])
        .await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}
