//! Executing approved writes, expiring stale approvals, recovering after a crash.

use std::sync::Arc;

use chrono::Utc;
use interlock_actors::approval::{ApprovalRunner, BoxFuture};
use interlock_actors::audit::AuditHandle;
use interlock_actors::cache::CacheHandle;
use interlock_actors::events::{Event, EventBus};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::images;
use super::recheck::{allowed_now, Queued};
use crate::call::{audit, mask, source_span, AuditDraft, Outcome};
use crate::control::approval_lifecycle::{self as lifecycle, Ended, LostExecution};
use crate::control::{instances, ControlError, ControlPool};
use crate::governance::{AllowedClass, SqlLimits};
use crate::sources::postgres::changes::Changes;
use crate::sources::postgres::exec_error::ExecError;
use crate::sources::postgres::execute::{self, Limits, Mode, Statement};
use crate::sources::postgres::pool::SourcePools;
use crate::sources::registry::SourceRegistry;
use crate::telemetry::traces::propagation::parse_traceparent;
use crate::telemetry::traces::{names, CallTrace, KeyValue, SpanContext, Tracing};

/// Everything execution needs, cloned out of the gateway state (no cycle through it).
#[derive(Clone)]
pub struct GatewayRunner {
    pub control: ControlPool,
    pub sources: Arc<SourceRegistry>,
    pub cache: CacheHandle,
    pub audit: AuditHandle,
    pub events: EventBus,
    pub instance: i32,
    /// Whether this instance holds its liveness lock; no claims without it.
    pub instance_held: Arc<std::sync::atomic::AtomicBool>,
    /// Tells the other replicas which tables an approved write changed.
    pub fleet: crate::fleet::Fleet,
    pub sql_limits: SqlLimits,
    /// Traces: an execution's span links to the call that queued it and to each decision.
    pub tracing: Tracing,
}

/// How a run ends that exceeded an estimated bound: rolled back, back to the approvers.
const RETURNED: &str = "returned";

struct Claimed {
    source_id: String,
    requester_id: Uuid,
    requester: String,
    statement: String,
    max_rows: Option<i64>,
    /// Whether `max_rows` is the planner's estimate (exceeding it hands the write back).
    estimated_bound: bool,
    preview_keys: Option<String>,
    call_facts: Option<Value>,
    /// `write`, or `read` for a read a policy held for approval (in the audit record).
    action: &'static str,
    /// The spans the execution follows from: the queuing call's, each decision's.
    links: Vec<SpanContext>,
}

impl GatewayRunner {
    async fn claim(&self, id: Uuid) -> Result<Option<Claimed>, ControlError> {
        if !self
            .instance_held
            .load(std::sync::atomic::Ordering::Acquire)
        {
            // Wait briefly for the lock at start-up; without it a crash could not be told apart.
            for _ in 0..50 {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                if self
                    .instance_held
                    .load(std::sync::atomic::Ordering::Acquire)
                {
                    break;
                }
            }
            if !self
                .instance_held
                .load(std::sync::atomic::Ordering::Acquire)
            {
                return Ok(None);
            }
        }
        let row = lifecycle::claim(&self.control, id, self.instance).await?;
        Ok(row.map(|r| Claimed {
            source_id: r.source_id,
            requester_id: r.requester_id,
            requester: r.requester,
            statement: r.statement,
            max_rows: r.max_rows,
            estimated_bound: r.bound_source.as_deref() == Some("estimate"),
            preview_keys: r.preview_keys,
            call_facts: r.call_facts,
            action: lifecycle::action_of(r.action.as_deref()),
            links: r
                .trace_contexts
                .iter()
                .filter_map(|t| parse_traceparent(t))
                .collect(),
        }))
    }

    /// Re-checks grants and policy as they are now, then runs the write.
    async fn run(&self, c: &Claimed, trace: &CallTrace) -> Ended {
        let failed = |reason: String| Ended {
            state: "failed",
            rows_affected: None,
            rows_changed: None,
            result: None,
            error: Some(reason),
        };
        let queued = Queued {
            source_id: &c.source_id,
            requester_id: c.requester_id,
            requester: &c.requester,
            statement: &c.statement,
            call_facts: c.call_facts.as_ref(),
        };
        let now = match allowed_now(&self.control, &self.sources, &self.sql_limits, &queued).await {
            Ok(now) => now,
            Err(reason) => return failed(reason),
        };
        let Some(pools) = now.rt.pools.as_ref() else {
            return failed("the source's connection settings are unusable".into());
        };
        if now.allowed.class == AllowedClass::Read {
            let bound = c.max_rows.and_then(|m| u64::try_from(m).ok());
            return read(&now, pools, bound, trace).await;
        }
        // Where the preview showed the rows by key, the write must change exactly those.
        let (statement, keys) = match &c.preview_keys {
            None => (now.allowed.statement.clone(), None),
            Some(digest) => match keyed(&now, pools, digest).await {
                Ok(keyed) => keyed,
                Err(reason) => return failed(reason),
            },
        };
        let never = CancellationToken::new();
        let limits = Limits {
            max_rows: u64::from(now.rt.source.max_rows),
            max_bytes: now.rt.source.max_bytes,
        };
        let bound = c.max_rows.and_then(|m| u64::try_from(m).ok());
        let sent = source_span::open(trace, &now.rt, &now.allowed, || {
            source_span::operation(&statement)
        });
        // The write runs as the requester (`caller`), not as the approver.
        let result = execute::run(
            pools,
            Mode::Write { bound, keys },
            Statement {
                text: &statement,
                comment: sent.comment.as_deref(),
            },
            &[],
            limits,
            &never,
            now.caller.as_ref(),
        )
        .await;
        if let Err(e) = &result {
            source_span::failed(&sent.span, e);
        }
        drop(sent);
        match result {
            Ok(rows) => {
                let affected = rows.affected.and_then(|n| i64::try_from(n).ok());
                let changed = rows.changed.as_ref().map(Changes::to_json);
                let returning = mask::returning_rows(
                    rows,
                    &now.allowed.output_columns,
                    &now.rt.source.mask_key,
                );
                let tables: Vec<(String, String)> = now
                    .allowed
                    .tables_written
                    .iter()
                    .map(|t| (t.schema.clone(), t.name.clone()))
                    .collect();
                self.cache.invalidate(&c.source_id, tables.clone()).await;
                self.fleet.invalidated(&c.source_id, &tables).await;
                Ended {
                    state: "executed",
                    rows_affected: affected,
                    rows_changed: changed,
                    result: returning,
                    error: None,
                }
            }
            // An estimate is not a bound anybody chose: hand it back with the count.
            Err(ExecError::BoundExceeded { affected, .. }) if c.estimated_bound => Ended {
                state: RETURNED,
                rows_affected: i64::try_from(affected).ok(),
                rows_changed: None,
                result: None,
                error: None,
            },
            Err(e) => failed(e.to_string()),
        }
    }

    async fn audit_event(
        &self,
        id: Uuid,
        source: &str,
        action: &'static str,
        tool: &str,
        outcome: Outcome,
        detail: Value,
    ) {
        let mut draft = AuditDraft::new(&format!("approval-{id}"), "approvals", None, tool);
        draft.source = Some(source.to_string());
        draft.approval_id = Some(id);
        draft.action = Some(action);
        draft.decision = detail;
        let _ = audit::append(&self.audit, draft, &outcome).await;
    }
}

/// An approved read, run as its requester under the row cap and masks it is decided with
/// now (and the approver's `max_rows`, when given); its rows (masked) are kept as the
/// approval's result, for the requester only.
async fn read(
    now: &super::recheck::Now,
    pools: &SourcePools,
    bound: Option<u64>,
    trace: &CallTrace,
) -> Ended {
    let a = &now.allowed;
    let limits = Limits {
        max_rows: u64::from(now.rt.source.max_rows)
            .min(a.row_cap.unwrap_or(u64::MAX))
            .min(bound.unwrap_or(u64::MAX))
            .max(1),
        max_bytes: now.rt.source.max_bytes,
    };
    let never = CancellationToken::new();
    let mode = Mode::read(a.explain, a.cap_form);
    let sent = source_span::open(trace, &now.rt, a, || source_span::operation(&a.statement));
    let params = mask::params_to_run(a, Vec::new(), &now.rt.source.mask_key);
    let result = execute::run(
        pools,
        mode,
        Statement {
            text: a.text_to_run(),
            comment: sent.comment.as_deref(),
        },
        &params,
        limits,
        &never,
        now.caller.as_ref(),
    )
    .await;
    if let Err(e) = &result {
        source_span::failed(&sent.span, e);
    }
    drop(sent);
    match result {
        Ok(rows) => {
            let count = i64::try_from(rows.rows.len()).ok();
            let truncated = rows.truncated.map(|t| t.label());
            let mut result = mask::returning_rows(rows, &a.output_columns, &now.rt.source.mask_key)
                .unwrap_or_else(|| json!([]));
            if let (Some(t), Some(all)) = (truncated, result.as_array().cloned()) {
                result = json!({"rows": all, "truncated": t});
            }
            Ended {
                state: "executed",
                rows_affected: count,
                rows_changed: None,
                result: Some(result),
                error: None,
            }
        }
        Err(e) => Ended {
            state: "failed",
            rows_affected: None,
            rows_changed: None,
            result: None,
            error: Some(e.to_string()),
        },
    }
}

impl ApprovalRunner for GatewayRunner {
    fn execute(&self, id: Uuid) -> BoxFuture<()> {
        let this = self.clone();
        Box::pin(async move {
            let claimed = match this.claim(id).await {
                Ok(Some(c)) => c,
                Ok(None) => return,
                Err(e) => {
                    tracing::error!(%id, error = %e, "claiming an approval failed");
                    return;
                }
            };
            // A trace of its own, linked to the call that queued it and to each decision.
            let span = this
                .tracing
                .linked_root(names::EXECUTE_SPAN, claimed.links.clone(), || {
                    vec![
                        KeyValue::new(names::APPROVAL_ID, id.to_string()),
                        KeyValue::new(names::SOURCE, claimed.source_id.clone()),
                        KeyValue::new(names::IDENTITY, claimed.requester.clone()),
                    ]
                });
            let trace = span.call();
            this.audit_event(
                id,
                &claimed.source_id,
                claimed.action,
                "approval.execute",
                Outcome::Json(Value::Null),
                json!({"step": "execution started"}),
            )
            .await;
            let ended = this.run(&claimed, &trace).await;
            span.set(|| vec![KeyValue::new(names::OUTCOME, ended.state)]);
            if ended.state == RETURNED {
                this.hand_back(id, &claimed, ended.rows_affected.unwrap_or(0))
                    .await;
                return;
            }
            if let Err(e) = lifecycle::finish(&this.control, id, &ended).await {
                tracing::error!(%id, error = %e, "storing an approval outcome failed");
            }
            let outcome = if ended.state == "executed" {
                Outcome::Json(Value::Null)
            } else {
                Outcome::Failed
            };
            let mut detail = json!({"state": ended.state, "rows_affected": ended.rows_affected,
                                    "rows_changed": ended.rows_changed, "error": ended.error});
            if let (Some(t), Some(d)) = (trace.trace_id(), detail.as_object_mut()) {
                d.insert("trace_id".into(), json!(t));
            }
            this.audit_event(
                id,
                &claimed.source_id,
                claimed.action,
                "approval.outcome",
                outcome,
                detail,
            )
            .await;
            this.events.publish(Event::ApprovalExecuted {
                id: id.to_string(),
                source: claimed.source_id.clone(),
                state: ended.state.to_string(),
                rows_affected: ended.rows_affected,
                rows_changed: ended.rows_changed,
                at: Utc::now(),
            });
        })
    }

    fn expire_due(&self) -> BoxFuture<u64> {
        let this = self.clone();
        Box::pin(async move {
            let rows = lifecycle::expire_due(&this.control)
                .await
                .unwrap_or_default();
            for (id, source, action) in &rows {
                let (id, source) = (*id, source.clone());
                this.audit_event(
                    id,
                    &source,
                    action,
                    "approval.expire",
                    Outcome::Json(Value::Null),
                    json!({"state": "expired"}),
                )
                .await;
                this.events.publish(Event::ApprovalExpired {
                    id: id.to_string(),
                    source,
                    at: Utc::now(),
                });
            }
            this.recover_dead_executions().await;
            if let Err(e) = crate::control::tasks::forget_ended(&this.control).await {
                tracing::warn!(error = %e, "ended tasks' answers could not be forgotten");
            }
            // Approved records whose hand-off to a queue was lost (e.g. a replica died right
            // after the deciding commit) are executed here; the claim keeps it to one run.
            for id in lifecycle::stale_approved(&this.control)
                .await
                .unwrap_or_default()
            {
                this.execute(id).await;
            }
            rows.len() as u64
        })
    }

    fn recover(&self) -> BoxFuture<Vec<Uuid>> {
        let this = self.clone();
        Box::pin(async move {
            this.recover_dead_executions().await;
            lifecycle::approved(&this.control).await.unwrap_or_default()
        })
    }

    fn abandoned(&self, id: Uuid) -> BoxFuture<()> {
        let this = self.clone();
        Box::pin(async move {
            match this.control.get().await {
                Ok(client) => this.mark_lost(&client, id, LostExecution::Abandoned).await,
                Err(e) => {
                    tracing::error!(%id, error = %e, "an abandoned execution could not be marked outcome_unknown; it stays executing until this gateway stops");
                }
            }
        })
    }
}

impl GatewayRunner {
    /// An approved run changed `measured` rows, more than the estimate it was bound to, and
    /// was rolled back: the approval goes back to its approvers, bound to the count, with
    /// its audit record and event.
    async fn hand_back(&self, id: Uuid, claimed: &Claimed, measured: i64) {
        let moved = match lifecycle::hand_back(&self.control, id, measured).await {
            Ok(Some(moved)) => moved,
            Ok(None) => return,
            Err(e) => {
                // Left executing: recovery makes it outcome_unknown, the write rolled back.
                tracing::error!(%id, error = %e, "handing an approval back failed");
                return;
            }
        };
        let (source, action, estimated) = moved;
        tracing::info!(%id, measured, ?estimated, "an approved run exceeded its estimated bound: handed back");
        self.audit_event(
            id,
            &source,
            action,
            "approval.return",
            Outcome::Json(Value::Null),
            json!({"state": "pending", "measured": measured, "estimated": estimated,
                   "why": "the approved run exceeded the planner's estimate; rolled back"}),
        )
        .await;
        self.events.publish(Event::ApprovalReturned {
            id: id.to_string(),
            source: claimed.source_id.clone(),
            measured,
            estimated,
            at: Utc::now(),
        });
    }

    /// `executing` approvals whose instance is gone become `outcome_unknown`: never re-run,
    /// surfaced for an operator to verify by hand.
    async fn recover_dead_executions(&self) {
        let Ok(client) = self.control.get().await else {
            return;
        };
        let Ok(rows) = lifecycle::executing_elsewhere(&client, self.instance).await else {
            return;
        };
        for (id, by) in rows {
            let dead = match by {
                Some(by) => instances::instance_dead(&**client, by)
                    .await
                    .unwrap_or(false),
                None => true,
            };
            if dead {
                self.mark_lost(&client, id, LostExecution::GatewayDied)
                    .await;
            }
        }
    }

    /// Moves `id` from `executing` to `outcome_unknown` (if it still is executing), with its
    /// audit record and event.
    async fn mark_lost(&self, client: &deadpool_postgres::Client, id: Uuid, why: LostExecution) {
        let Ok(Some((source, action))) = lifecycle::mark_outcome_unknown(client, id, why).await
        else {
            return;
        };
        tracing::warn!(%id, ?why, "approval execution ended without an outcome: outcome unknown");
        self.audit_event(
            id,
            &source,
            action,
            "approval.recover",
            Outcome::Failed,
            json!({"state": "outcome_unknown"}),
        )
        .await;
        self.events.publish(Event::ApprovalExecuted {
            id: id.to_string(),
            source,
            state: "outcome_unknown".into(),
            rows_affected: None,
            rows_changed: None,
            at: Utc::now(),
        });
    }
}

/// The write as it runs when its preview showed the rows by key: the statement with each
/// changed row's key as its last column, and the digest of the keys it must change.
async fn keyed(
    now: &super::recheck::Now,
    pools: &crate::sources::postgres::pool::SourcePools,
    digest: &str,
) -> Result<(String, Option<[u8; 32]>), String> {
    let unchecked = |why: String| {
        format!(
            "the rows the preview showed can no longer be checked ({why}); the write was not run"
        )
    };
    let expected: [u8; 32] = hex::decode(digest)
        .ok()
        .and_then(|d| d.try_into().ok())
        .ok_or_else(|| unchecked("the stored digest is malformed".into()))?;
    let [target] = now.allowed.tables_written.as_slice() else {
        return Err(unchecked("the write changes more than one table".into()));
    };
    let pk = super::preview::primary_key(pools, target)
        .await
        .map_err(|e| unchecked(e.to_string()))?;
    let sql = images::keyed_sql(&now.allowed.statement, target, &pk).map_err(unchecked)?;
    Ok((sql, Some(expected)))
}
