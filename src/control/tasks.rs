//! MCP tasks as stored: `mcp_tasks`, joined to the approval a held call's task waits on.
//! Every read is scoped to the requester and to the task's ttl: another identity's task, an
//! unknown id and a task whose ttl has ended are all simply absent.

use chrono::{DateTime, Utc};
use serde_json::Value;
use uuid::Uuid;

use super::{ControlError, ControlPool};

/// The approval a task waits on, as far as the task shows it to its requester.
#[derive(Debug, Clone)]
pub struct TaskApproval {
    pub state: String,
    pub source_id: String,
    /// `write`, or `read` for a read a policy held.
    pub action: Option<String>,
    pub approvals_required: i32,
    /// Approvals given so far.
    pub approvals: i64,
    /// Who rejected it and why (`name: reason`), when it was rejected.
    pub rejected_by: Option<String>,
    pub expires_at: DateTime<Utc>,
    pub rows_affected: Option<i64>,
    pub rows_changed: Option<Value>,
    /// The statement's `RETURNING` rows, or an approved read's rows (masked).
    pub result: Option<Value>,
    pub error: Option<String>,
    pub max_rows: Option<i64>,
    /// The last hand-back (an approved run exceeded the estimate: `estimated`, `measured`).
    pub returned: Option<Value>,
}

/// One task of one requester.
#[derive(Debug, Clone)]
pub struct TaskRow {
    pub id: Uuid,
    pub tool: String,
    pub created_at: DateTime<Utc>,
    /// The latest of its creation and every change of its approval.
    pub last_updated_at: DateTime<Utc>,
    pub ttl_ms: i64,
    /// A call answered at once: its CallToolResult.
    pub answer: Option<Value>,
    /// A held call: its approval.
    pub approval: Option<TaskApproval>,
}

/// Records the task of a call that was answered at once (2025-11-25 `params.task` on a call
/// that was not held); returns when it was created.
pub async fn insert_answered(
    pool: &ControlPool,
    id: Uuid,
    requester: Uuid,
    tool: &str,
    ttl_ms: i64,
    answer: &Value,
) -> Result<DateTime<Utc>, ControlError> {
    let row = pool
        .get()
        .await?
        .query_one(
            "INSERT INTO mcp_tasks (id, requester_id, tool, ttl_ms, expires_at, answer)
             VALUES ($1, $2, $3, $4, now() + make_interval(secs => $4::bigint / 1000.0), $5)
             RETURNING created_at",
            &[&id, &requester, &tool, &ttl_ms, answer],
        )
        .await?;
    Ok(row.get(0))
}

const SELECT: &str =
    "SELECT t.id, t.tool, t.created_at, t.ttl_ms, t.answer, a.id IS NOT NULL AS held,
       a.state, a.source_id, a.touches ->> 'action' AS action, a.approvals_required,
       (SELECT count(*) FROM approval_decisions d
         WHERE d.approval_id = a.id AND d.decision = 'approve') AS approvals,
       (SELECT i.name || coalesce(': ' || nullif(d.reason, ''), '') FROM approval_decisions d
          JOIN identities i ON i.id = d.approver_id
         WHERE d.approval_id = a.id AND d.decision = 'reject' LIMIT 1) AS rejected_by,
       a.expires_at, a.rows_affected, a.rows_changed, a.result, a.error, a.max_rows,
       a.handbacks -> -1 AS returned,
       greatest(t.created_at, a.executing_at, a.executed_at, a.withdrawn_at,
                (SELECT max(d.decided_at) FROM approval_decisions d WHERE d.approval_id = a.id),
                CASE WHEN a.state = 'expired' THEN a.expires_at END) AS last_updated_at
  FROM mcp_tasks t LEFT JOIN approvals a ON a.id = t.approval_id
 WHERE t.requester_id = $1
   AND ($2::uuid IS NULL OR t.id = $2)
   AND ($3::timestamptz IS NULL OR (t.created_at, t.id) < ($3, $4::uuid))
   AND t.expires_at > now()
 ORDER BY t.created_at DESC, t.id DESC
 LIMIT $5";

fn from_row(r: &tokio_postgres::Row) -> TaskRow {
    let held: bool = r.get("held");
    TaskRow {
        id: r.get("id"),
        tool: r.get("tool"),
        created_at: r.get("created_at"),
        last_updated_at: r.get("last_updated_at"),
        ttl_ms: r.get("ttl_ms"),
        answer: r.get("answer"),
        approval: held.then(|| TaskApproval {
            state: r.get("state"),
            source_id: r.get("source_id"),
            action: r.get("action"),
            approvals_required: r.get("approvals_required"),
            approvals: r.get("approvals"),
            rejected_by: r.get("rejected_by"),
            expires_at: r.get("expires_at"),
            rows_affected: r.get("rows_affected"),
            rows_changed: r.get("rows_changed"),
            result: r.get("result"),
            error: r.get("error"),
            max_rows: r.get("max_rows"),
            returned: r.get("returned"),
        }),
    }
}

/// Task `id` of `requester`, while its ttl lasts.
pub async fn get(
    pool: &ControlPool,
    requester: Uuid,
    id: Uuid,
) -> Result<Option<TaskRow>, ControlError> {
    let none: Option<DateTime<Utc>> = None;
    let row = pool
        .get()
        .await?
        .query_opt(
            SELECT,
            &[&requester, &Some(id), &none, &None::<Uuid>, &1i64],
        )
        .await?;
    Ok(row.as_ref().map(from_row))
}

/// Up to `limit` of `requester`'s live tasks, newest first, older than `before` (a
/// previous page's last task: its creation time and id).
pub async fn list(
    pool: &ControlPool,
    requester: Uuid,
    before: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<TaskRow>, ControlError> {
    let (at, id) = before.unzip();
    let rows = pool
        .get()
        .await?
        .query(SELECT, &[&requester, &None::<Uuid>, &at, &id, &limit])
        .await?;
    Ok(rows.iter().map(from_row).collect())
}

/// Forgets the kept answers of calls answered at once (2025-11-25 tasks: a read's rows,
/// masked) once their ttl has ended, so no result outlives the task it was kept for; a held
/// call's task row stays with its approval (it holds no result of its own). Returns how
/// many were forgotten.
pub async fn forget_ended(pool: &ControlPool) -> Result<u64, ControlError> {
    Ok(pool
        .get()
        .await?
        .execute(
            "DELETE FROM mcp_tasks WHERE approval_id IS NULL AND expires_at <= now()",
            &[],
        )
        .await?)
}

/// Whether approval `id` is waited on as a task (the console says so).
pub async fn waited_on(pool: &ControlPool, ids: &[Uuid]) -> Result<Vec<Uuid>, ControlError> {
    let rows = pool
        .get()
        .await?
        .query(
            "SELECT approval_id FROM mcp_tasks WHERE approval_id = ANY($1)",
            &[&ids],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}
