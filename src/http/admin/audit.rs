//! The audit log for operators: filtered listing (newest first, paged) and chain check.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;

use super::auth::{error, Admin, Operators};
use crate::control::audit::{self as repo, AuditFilter};
use crate::AppState;

#[derive(Debug, Deserialize)]
pub struct AuditQuery {
    identity: Option<String>,
    source: Option<String>,
    outcome: Option<String>,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
    /// Paging: records older than this sequence number (the previous page's `next_before`).
    before: Option<i64>,
    limit: Option<i64>,
}

pub async fn list(
    _caller: Admin<Operators>,
    q: web::Query<AuditQuery>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let limit = q.limit.unwrap_or(100).clamp(1, 1000);
    let filter = AuditFilter {
        identity: q.identity.clone(),
        source: q.source.clone(),
        outcome: q.outcome.clone(),
        since: q.since,
        until: q.until,
        before_seq: q.before,
        limit,
    };
    match repo::list(&state.control, &filter).await {
        Ok(rows) => {
            let next = (rows.len() as i64 == limit)
                .then(|| rows.last().map(|r| r.0))
                .flatten();
            let records: Vec<_> = rows
                .into_iter()
                .map(|(seq, r)| {
                    let mut v = serde_json::to_value(r).unwrap_or_default();
                    v["seq"] = json!(seq);
                    v
                })
                .collect();
            HttpResponse::Ok().json(json!({"records": records, "next_before": next}))
        }
        Err(e) => {
            tracing::error!(error = %e, "listing audit records failed");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "control database unavailable",
            )
        }
    }
}

pub async fn verify(_caller: Admin<Operators>, state: web::Data<AppState>) -> HttpResponse {
    let key = state.checkpoint_key.as_ref().map(|k| k.verifier_key());
    let checked = async {
        let chain = repo::verify(&state.control).await?;
        let tree = crate::control::leaves::verify(&state.control).await?;
        let heads = crate::control::signed_heads::verify(&state.control, key).await?;
        Ok::<_, crate::control::ControlError>((chain, tree, heads))
    };
    match checked.await {
        Ok((chain, tree, heads)) => {
            let mut body = serde_json::to_value(&chain).unwrap_or_default();
            // "ok" holds only when all hold: the chain, the records against the tree, and
            // the tree against every signed checkpoint.
            body["ok"] = (chain.ok && tree.ok && heads.ok).into();
            body["chain_ok"] = chain.ok.into();
            body["tree"] = serde_json::to_value(&tree).unwrap_or_default();
            body["checkpoints"] = serde_json::to_value(&heads).unwrap_or_default();
            HttpResponse::Ok().json(body)
        }
        Err(e) => {
            tracing::error!(error = %e, "verifying the audit chain failed");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "control database unavailable",
            )
        }
    }
}
