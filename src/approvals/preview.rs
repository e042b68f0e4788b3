//! What a queued write would do, shown to its approvers before they decide, and the bound
//! the write is then held to (`approvals.max_rows`).
//!
//! Per source (`approval_preview`):
//! - `explain` (the default): `EXPLAIN (FORMAT JSON)` on the write login; the plan and the
//!   planner's estimate of the rows the write touches. Nothing runs.
//! - `dry_run` (opt-in): the write executed in a transaction that is always rolled back,
//!   under `approvals.preview_statement_timeout_ms` and `approvals.preview_lock_timeout_ms`:
//!   the rows it affects and, where the write's shape allows, row images before and after
//!   ([`super::images`]); otherwise up to [`RETURNING_ROWS`] rows of its own `RETURNING`,
//!   masked as the requester sees them. A rolled-back run still consumes sequence values and fires
//!   triggers, and whatever a trigger does outside the database is not rolled back: that is
//!   why it is opt-in.
//! - `off`: no preview.
//!
//! The preview is computed in the background when the write is queued and again when an
//! approver asks; a preview that fails says why and never blocks the decision. Unless an
//! approver set one, the bound becomes the previewed (or estimated) row count.

use std::sync::Arc;

use chrono::Utc;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::images::{self, WriteKind};
use super::recheck::{allowed_now, Now, Queued};
use crate::control::approval_lifecycle as lifecycle;
use crate::control::approvals;
use crate::control::sources::PreviewMode;
use crate::control::{ControlError, ControlPool};
use crate::governance::readable_columns;
use crate::governance::SqlLimits;
use crate::pipeline::mask;
use crate::sources::postgres::execute::{self, Limits, Mode, PreviewTimeouts};
use crate::sources::registry::SourceRegistry;

/// Rows of a dry run's `RETURNING` kept in the preview.
pub const RETURNING_ROWS: u64 = 20;

pub struct Previewer {
    pub control: ControlPool,
    pub sources: Arc<SourceRegistry>,
    pub sql_limits: SqlLimits,
    pub timeouts: PreviewTimeouts,
}

impl Previewer {
    /// Computes and stores the preview of approval `id` (which must exist); returns it.
    pub async fn preview(&self, id: Uuid) -> Result<Value, ControlError> {
        let Some(a) = approvals::get(&self.control, id, None).await? else {
            return Err(ControlError::NotFound(format!("no approval {id}")));
        };
        let queued = Queued {
            source_id: &a.source_id,
            requester_id: a.requester_id,
            requester: &a.requester,
            statement: &a.statement,
        };
        let (preview, bound) = self.compute(&queued).await;
        lifecycle::store_preview(&self.control, id, &preview, bound).await?;
        Ok(preview)
    }

    /// The preview and the bound it suggests.
    async fn compute(&self, q: &Queued<'_>) -> (Value, Option<i64>) {
        let now = match allowed_now(&self.control, &self.sources, &self.sql_limits, q).await {
            Ok(now) => now,
            Err(reason) => return (failed(None, &reason), None),
        };
        let (rt, allowed) = (&now.rt, &now.allowed);
        let mode = rt.source.approval_preview;
        let Some(pools) = rt.pools.as_ref() else {
            return (
                failed(Some(mode), "the source's connection settings are unusable"),
                None,
            );
        };
        let never = CancellationToken::new();
        let limits = Limits {
            max_rows: RETURNING_ROWS,
            max_bytes: rt.source.max_bytes,
        };
        match mode {
            PreviewMode::Off => (json!({"mode": "off", "computed_at": Utc::now()}), None),
            PreviewMode::Explain => {
                match execute::run(
                    pools,
                    Mode::Estimate,
                    &allowed.statement,
                    &[],
                    limits,
                    &never,
                    now.caller.as_ref(),
                )
                .await
                {
                    Ok(rows) => {
                        let plan = first_value(rows);
                        let estimate = estimated_rows(&plan);
                        (
                            json!({"mode": "explain", "ok": true, "estimated_rows": estimate,
                                   "plan": plan, "computed_at": Utc::now()}),
                            estimate,
                        )
                    }
                    Err(e) => (failed(Some(mode), &e.to_string()), None),
                }
            }
            PreviewMode::DryRun => match self.imaged(&now, limits).await {
                Imaged::Done(preview, bound) => (preview, bound),
                Imaged::Failed(e) => (failed(Some(mode), &self.why(&e)), None),
                Imaged::Without(why) => self.plain_dry_run(&now, limits, &why).await,
            },
        }
    }

    /// The dry run with row images (see [`super::images`]), when the write's shape allows.
    async fn imaged(&self, now: &Now, limits: Limits) -> Imaged {
        let [target] = now.allowed.tables_written.as_slice() else {
            return Imaged::Without("the write changes more than one table".into());
        };
        let readable = readable_columns(&now.profile, &now.catalog.catalog)
            .into_iter()
            .find(|r| r.relation == *target);
        let Some(readable) = readable else {
            return Imaged::Without(format!("the requester may read no column of {target}"));
        };
        let Some(pools) = now.rt.pools.as_ref() else {
            return Imaged::Without("the source's connection settings are unusable".into());
        };
        let never = CancellationToken::new();
        let dry = Mode::DryRun(self.timeouts);
        let pk = match execute::run(
            pools,
            dry,
            &images::primary_key_sql(target),
            &[],
            limits,
            &never,
            None,
        )
        .await
        {
            Ok(rows) => first_value(rows),
            Err(e) => return Imaged::Failed(e),
        };
        let pk: Vec<String> = pk
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let (sql, kind) = match images::images_sql(&now.allowed.statement, target, &pk) {
            Ok(planned) => planned,
            Err(why) => return Imaged::Without(why),
        };
        let caller = now.caller.as_ref();
        let rows = match execute::run(pools, dry, &sql, &[], limits, &never, caller).await {
            Ok(rows) => rows,
            Err(e) => return Imaged::Failed(e),
        };
        let row = rows.rows.into_iter().next().unwrap_or_default();
        let mut values = row.into_iter();
        let count = values.next().and_then(|v| v.as_i64());
        let returned = values.next().unwrap_or(Value::Null);
        let old = values.next().unwrap_or(Value::Null);
        let key = &now.rt.source.mask_key;
        let after = match kind {
            WriteKind::Delete => Value::Array(Vec::new()),
            WriteKind::Insert | WriteKind::Update => images::view(&returned, &readable, key),
        };
        let before = images::view(&old, &readable, key);
        Imaged::Done(
            json!({"mode": "dry_run", "ok": true, "rows_affected": count,
                   "table": target.to_string(), "before": before, "after": after,
                   "images_limit": images::IMAGE_ROWS, "computed_at": Utc::now()}),
            count,
        )
    }

    /// The dry run without images: the count and the statement's own `RETURNING` rows.
    async fn plain_dry_run(
        &self,
        now: &Now,
        limits: Limits,
        no_images: &str,
    ) -> (Value, Option<i64>) {
        let (rt, allowed) = (&now.rt, &now.allowed);
        let mode = PreviewMode::DryRun;
        let Some(pools) = rt.pools.as_ref() else {
            return (
                failed(Some(mode), "the source's connection settings are unusable"),
                None,
            );
        };
        let never = CancellationToken::new();
        let dry = Mode::DryRun(self.timeouts);
        let caller = now.caller.as_ref();
        match execute::run(pools, dry, &allowed.statement, &[], limits, &never, caller).await {
            Ok(rows) => {
                let affected = rows.affected.and_then(|n| i64::try_from(n).ok());
                let truncated = rows.truncated.is_some();
                let returning =
                    mask::returning_rows(rows, &allowed.output_columns, &rt.source.mask_key);
                (
                    json!({"mode": "dry_run", "ok": true, "rows_affected": affected,
                                   "returning": returning, "returning_truncated": truncated,
                                   "no_images": no_images, "computed_at": Utc::now()}),
                    affected,
                )
            }
            Err(e) => (failed(Some(mode), &self.why(&e)), None),
        }
    }

    /// Why a dry run failed, in an approver's words for the two timeouts it runs under.
    fn why(&self, e: &execute::ExecError) -> String {
        match e {
            execute::ExecError::Refused { code, .. } if code == "55P03" => format!(
                "waited longer than approvals.preview_lock_timeout_ms ({} ms) for a lock another session holds on rows or tables this write needs",
                self.timeouts.lock_ms
            ),
            execute::ExecError::StatementTimeout => format!(
                "ran longer than approvals.preview_statement_timeout_ms ({} ms)",
                self.timeouts.statement_ms
            ),
            other => other.to_string(),
        }
    }
}

/// How the imaged dry run went.
enum Imaged {
    Done(Value, Option<i64>),
    /// The source refused or timed out: the preview failed.
    Failed(execute::ExecError),
    /// The write's shape has no images; the plain dry run runs instead.
    Without(String),
}

fn first_value(rows: execute::Rows) -> Value {
    rows.rows
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next())
        .unwrap_or(Value::Null)
}

fn failed(mode: Option<PreviewMode>, why: &str) -> Value {
    json!({"mode": mode.map(PreviewMode::as_str), "ok": false, "error": why, "computed_at": Utc::now()})
}

/// The planner's estimate of the rows a write touches: a write's top node (ModifyTable)
/// reports 0 rows without `RETURNING`, so its input's estimate is the one that counts.
pub fn estimated_rows(plan: &Value) -> Option<i64> {
    let top = plan.get(0)?.get("Plan")?;
    let node = if top.get("Node Type").and_then(Value::as_str) == Some("ModifyTable") {
        top.get("Plans").and_then(|p| p.get(0)).unwrap_or(top)
    } else {
        top
    };
    node.get("Plan Rows")
        .and_then(Value::as_f64)
        .map(|r| r.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::estimated_rows;
    use serde_json::json;

    #[test]
    fn the_estimate_is_the_modified_rows_not_the_modify_node() {
        let update = json!([{"Plan": {"Node Type": "ModifyTable", "Plan Rows": 0,
            "Plans": [{"Node Type": "Seq Scan", "Plan Rows": 42}]}}]);
        assert_eq!(estimated_rows(&update), Some(42));
        let insert_values = json!([{"Plan": {"Node Type": "ModifyTable", "Plan Rows": 0,
            "Plans": [{"Node Type": "Result", "Plan Rows": 1}]}}]);
        assert_eq!(estimated_rows(&insert_values), Some(1));
        let other = json!([{"Plan": {"Node Type": "Result", "Plan Rows": 3.4}}]);
        assert_eq!(estimated_rows(&other), Some(3));
        assert_eq!(estimated_rows(&json!(null)), None);
    }
}
