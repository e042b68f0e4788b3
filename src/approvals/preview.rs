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
//! approver set one, the bound becomes the previewed (or estimated) row count. An estimated
//! bound is a statistic: an approved run that exceeds it is rolled back and handed back to
//! the approvers with the exact count (`runner`), where any other bound fails the write.

use std::sync::Arc;

use chrono::Utc;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use super::images::{self, WriteKind};
use super::recheck::{allowed_now, Now, Queued};
use super::side_effects;
use crate::call::mask;
use crate::control::approval_lifecycle as lifecycle;
use crate::control::approvals;
use crate::control::sources::PreviewMode;
use crate::control::{ControlError, ControlPool};
use crate::governance::readable_columns;
use crate::governance::AllowedClass;
use crate::governance::SqlLimits;
use crate::sources::postgres::changes::Changes;
use crate::sources::postgres::execute::{self, CapForm, Limits, Mode, PreviewTimeouts};
use crate::sources::postgres::pool::SourcePools;
use crate::sources::registry::SourceRegistry;
use crate::sql::lineage::RelationRef;

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
            call_facts: a.call_facts.as_ref(),
        };
        let (preview, bound, keys) = match self.compute(&queued).await {
            Computed::Imaged(preview, bound, keys) => (preview, bound, Some(keys)),
            Computed::Unkeyed(preview, bound) => (preview, bound, None),
        };
        // An explain preview's count is the planner's estimate; a dry run's is a count.
        let source = if preview.get("mode").and_then(Value::as_str) == Some("explain") {
            lifecycle::BoundSource::Estimate
        } else {
            lifecycle::BoundSource::DryRun
        };
        let bound = bound.map(|b| (b, source));
        lifecycle::store_preview(&self.control, id, &preview, bound, keys.as_deref()).await?;
        Ok(preview)
    }

    /// The preview, the bound it suggests, and the keys of the rows it showed.
    async fn compute(&self, q: &Queued<'_>) -> Computed {
        let now = match allowed_now(&self.control, &self.sources, &self.sql_limits, q).await {
            Ok(now) => now,
            Err(reason) => return Computed::Unkeyed(failed(None, &reason), None),
        };
        if now.allowed.class == AllowedClass::Read {
            // A read held for approval changes nothing: the approver sees what it reads.
            let a = &now.allowed;
            let preview = json!({
                "mode": "read",
                "ok": true,
                "changes_nothing": true,
                "tables_read": a.tables_read.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "columns": a.output_columns.iter().map(|c| json!({
                    "name": c.name,
                    "masked": c.mask.as_ref().map(|m| crate::governance::effect::strategy_label(&m.strategy)),
                })).collect::<Vec<_>>(),
                "row_cap": u64::from(now.rt.source.max_rows).min(a.row_cap.unwrap_or(u64::MAX)),
                "computed_at": Utc::now(),
            });
            return Computed::Unkeyed(preview, None);
        }
        match self.preview_of(&now).await {
            Computed::Unkeyed(preview, bound) => Computed::Unkeyed(not_imaged(preview), bound),
            imaged => imaged,
        }
    }

    /// The preview the source's mode asks for.
    async fn preview_of(&self, now: &Now) -> Computed {
        let rt = &now.rt;
        let mode = rt.source.approval_preview;
        let Some(pools) = rt.pools.as_ref() else {
            let unusable = failed(Some(mode), "the source's connection settings are unusable");
            return Computed::Unkeyed(unusable, None);
        };
        let limits = Limits {
            max_rows: RETURNING_ROWS,
            max_bytes: rt.source.max_bytes,
        };
        let (preview, bound) = match mode {
            PreviewMode::Off => (json!({"mode": "off", "computed_at": Utc::now()}), None),
            PreviewMode::Explain => self.explain(now, pools, limits).await,
            PreviewMode::DryRun => match self.imaged(now, limits).await {
                Imaged::Done(preview, bound, keys) => {
                    return Computed::Imaged(preview, bound, keys)
                }
                Imaged::Failed(e) => (failed(Some(mode), &self.why(&e)), None),
                Imaged::Without(why) => self.plain_dry_run(now, limits, &why).await,
            },
        };
        Computed::Unkeyed(preview, bound)
    }

    /// The planner's estimate: nothing runs. For `EXPLAIN (ANALYSE)` of a write, the
    /// estimate of the write inside it. Triggers and foreign-key actions are not in a plan:
    /// those on the tables the write changes are named, since the bound counts their rows.
    async fn explain(
        &self,
        now: &Now,
        pools: &SourcePools,
        limits: Limits,
    ) -> (Value, Option<i64>) {
        let mode = PreviewMode::Explain;
        let never = CancellationToken::new();
        let planned = match crate::sql::explained::explained(&now.allowed.statement) {
            Ok(planned) => planned,
            Err(why) => return (failed(Some(mode), &why), None),
        };
        let caller = now.caller.as_ref();
        let plan = match execute::run(pools, Mode::Estimate, &planned, &[], limits, &never, caller)
            .await
        {
            Ok(rows) => first_value(rows),
            Err(e) => return (failed(Some(mode), &e.to_string()), None),
        };
        let estimate = estimated_rows(&plan);
        let cost = plan
            .get(0)
            .and_then(|d| d.get("Plan"))
            .and_then(|p| p.get("Total Cost"))
            .and_then(Value::as_f64);
        let also = match side_effects::of(pools, &now.allowed.tables_written).await {
            Ok(also) => also,
            Err(e) => return (failed(Some(mode), &e.to_string()), None),
        };
        (
            json!({"mode": "explain", "ok": true, "estimated_rows": estimate,
                   "estimated_cost": cost, "plan": plan,
                   "may_also_change": also, "computed_at": Utc::now()}),
            estimate,
        )
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
        let pk = match primary_key(pools, target).await {
            Ok(pk) => pk,
            Err(e) => return Imaged::Failed(e),
        };
        let (sql, kind) = match images::images_sql(&now.allowed.statement, target, &pk) {
            Ok(planned) => planned,
            Err(why) => return Imaged::Without(why),
        };
        let caller = now.caller.as_ref();
        let rows = match execute::run(pools, dry, &sql, &[], limits, &never, caller).await {
            Ok(rows) => rows,
            Err(e) => return Imaged::Failed(e),
        };
        // The effect is every row the write changed, in every table (triggers included).
        let count = rows.affected.and_then(|n| i64::try_from(n).ok());
        let changed = rows.changed.as_ref().map(Changes::to_json);
        let row = rows.rows.into_iter().next().unwrap_or_default();
        let mut values = row.into_iter().skip(1);
        let returned = values.next().unwrap_or(Value::Null);
        let old = values.next().unwrap_or(Value::Null);
        let Some(Value::String(keys)) = values.next() else {
            return Imaged::Without("the keys of the changed rows could not be read".into());
        };
        let key = &now.rt.source.mask_key;
        let after = match kind {
            WriteKind::Delete => Value::Array(Vec::new()),
            WriteKind::Insert | WriteKind::Update => images::view(&returned, &readable, key),
        };
        let before = images::view(&old, &readable, key);
        Imaged::Done(
            json!({"mode": "dry_run", "ok": true, "rows_affected": count,
                   "rows_changed": changed, "table": target.to_string(), "before": before,
                   "after": after, "images_limit": images::IMAGE_ROWS,
                   "bound_to_rows_shown": true,
                   "bound_to_rows_shown_why": "the write must change exactly the rows of this preview, by primary key, or it fails with nothing changed",
                   "computed_at": Utc::now()}),
            count,
            keys,
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
                let changed = rows.changed.as_ref().map(Changes::to_json);
                let truncated = rows.truncated.is_some();
                let returning =
                    mask::returning_rows(rows, &allowed.output_columns, &rt.source.mask_key);
                (
                    json!({"mode": "dry_run", "ok": true, "rows_affected": affected,
                                   "rows_changed": changed,
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

/// A computed preview and the bound it suggests; an imaged one also with the digest of
/// the keys of the rows it showed.
enum Computed {
    Imaged(Value, Option<i64>, String),
    Unkeyed(Value, Option<i64>),
}

/// A preview that showed no rows by key says so: the write is held to its count only.
fn not_imaged(mut preview: Value) -> Value {
    if let Some(p) = preview.as_object_mut() {
        p.insert("bound_to_rows_shown".into(), Value::Bool(false));
        p.insert(
            "bound_to_rows_shown_why".into(),
            Value::String(
                "this preview did not image the changed rows by key: the write is held to its row count only"
                    .into(),
            ),
        );
    }
    preview
}

/// The primary-key columns of `target`, in key order (empty when it has none).
pub async fn primary_key(
    pools: &SourcePools,
    target: &RelationRef,
) -> Result<Vec<String>, execute::ExecError> {
    let limits = Limits {
        max_rows: 1,
        max_bytes: 1 << 20,
    };
    let never = CancellationToken::new();
    let rows = execute::run(
        pools,
        Mode::Query(CapForm::Wrapped),
        &images::primary_key_sql(target),
        &[],
        limits,
        &never,
        None,
    )
    .await?;
    Ok(first_value(rows)
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

/// How the imaged dry run went.
enum Imaged {
    Done(Value, Option<i64>, String),
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

/// The planner's estimate of the rows a write changes: the sum, over every ModifyTable node
/// of the plan (one per data-modifying statement, wherever it sits: the top, a CTE, an
/// init plan), of its input's estimate (a ModifyTable node itself reports 0 rows without
/// `RETURNING`). `None` when the plan modifies nothing or is not a plan.
pub fn estimated_rows(plan: &Value) -> Option<i64> {
    fn walk(node: &Value, sum: &mut Option<f64>) {
        let children = node.get("Plans").and_then(Value::as_array);
        if node.get("Node Type").and_then(Value::as_str) == Some("ModifyTable") {
            let input = children
                .and_then(|c| c.first())
                .and_then(|c| c.get("Plan Rows"))
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            *sum = Some(sum.unwrap_or(0.0) + input);
        }
        for child in children.into_iter().flatten() {
            walk(child, sum);
        }
    }
    let mut sum = None;
    walk(plan.get(0)?.get("Plan")?, &mut sum);
    sum.map(|r| r.round() as i64)
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
        // Data-modifying CTEs: each ModifyTable below a Result or CTE Scan counts.
        let ctes = json!([{"Plan": {"Node Type": "Result", "Plan Rows": 1, "Plans": [
            {"Node Type": "ModifyTable", "Subplan Name": "CTE u", "Plans": [
                {"Node Type": "Seq Scan", "Plan Rows": 10000}]},
            {"Node Type": "CTE Scan", "Plans": [{"Node Type": "ModifyTable", "Plans": [
                {"Node Type": "Index Scan", "Plan Rows": 2.4}]}]}]}}]);
        assert_eq!(estimated_rows(&ctes), Some(10002));
        let read = json!([{"Plan": {"Node Type": "Result", "Plan Rows": 3.4}}]);
        assert_eq!(estimated_rows(&read), None);
        assert_eq!(estimated_rows(&json!(null)), None);
    }
}
