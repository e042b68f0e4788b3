//! Sources and circuits for operators.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use interlock_actors::breaker::ForceAction;
use serde::Deserialize;
use serde_json::{json, Value};

use super::audit_log;
use super::auth::{control_error, error, Admin, Operators};
use crate::control::sources;
use crate::fleet::Changed;
use crate::sources::registry::SourceRuntime;
use crate::AppState;

/// Everything an operator sees about one source.
fn source_json(rt: &SourceRuntime, cache_entries: u64) -> Value {
    let s = &rt.source;
    let circuit = rt.breaker.snapshot();
    let pool = rt.pools.as_ref().map(|p| {
        let st = p.read.status();
        json!({"size": st.size, "max_size": st.max_size, "in_use": st.size.saturating_sub(st.available), "waiting": st.waiting})
    });
    json!({
        "id": s.id,
        "type": s.kind.as_str(),
        "description": s.description,
        "enabled": s.enabled,
        "database": s.dbname.as_ref().map(|d| format!("{}:{}/{d}", s.host.clone().unwrap_or_default(), s.port.unwrap_or(0))),
        "tls": s.tls_mode.as_str(),
        "limits": {"statement_timeout_ms": s.statement_timeout_ms, "max_rows": s.max_rows, "max_bytes": s.max_bytes,
                   "cache_ttl_ms": s.cache_ttl_ms, "approval_ttl_secs": s.approval_ttl_secs,
                   "approvals_required": s.approvals_required,
                   "approval_preview": s.approval_preview,
                   "identity_propagation": s.identity_propagation,
                   "identity_roles": s.identity_roles},
        "circuit": circuit,
        "pool": pool,
        "settings_error": rt.pool_error.as_ref().map(|e| &e.message),
        "stats": rt.stats.snapshot(),
        "cache_entries": cache_entries,
        "catalog": rt.catalog().map(|c| json!({"scanned_at": c.stored.scanned_at, "truncated": c.stored.truncated,
                                                 "relations": c.stored.relations.len()})),
    })
}

pub async fn list(_caller: Admin<Operators>, state: web::Data<AppState>) -> HttpResponse {
    let entries = state.cache.entry_count();
    let all: Vec<Value> = state
        .sources
        .all()
        .iter()
        .map(|rt| source_json(rt, entries))
        .collect();
    HttpResponse::Ok().json(json!({"sources": all}))
}

pub async fn show(
    _caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let Some(rt) = state.sources.get(&path) else {
        return error(StatusCode::NOT_FOUND, "not_found", "no source with that id");
    };
    let mut body = source_json(&rt, state.cache.entry_count());
    if let Value::Object(m) = &mut body {
        m.insert(
            "fleet".into(),
            super::replicas::circuit_view(&state, &rt.source.id).await,
        );
    }
    HttpResponse::Ok().json(body)
}

/// Reloads registrations now so the change is visible on this replica at once, and tells
/// the other replicas to reload theirs.
async fn reload(state: &AppState, id: &str) -> HttpResponse {
    if let Err(e) = state.sources.reload().await {
        return control_error(e);
    }
    state.fleet.changed(Changed::Sources).await;
    match state.sources.get(id) {
        Some(rt) => HttpResponse::Ok().json(source_json(&rt, state.cache.entry_count())),
        None => error(StatusCode::NOT_FOUND, "not_found", "no source with that id"),
    }
}

pub async fn create(
    caller: Admin<Operators>,
    body: web::Json<sources::NewSource>,
    state: web::Data<AppState>,
) -> HttpResponse {
    match sources::add_source(&state.control, &body).await {
        Ok(s) => {
            audit_log::record(
                &state,
                &caller,
                "admin.source.create",
                Some(&s.id),
                json!({"source": s.id}),
            )
            .await;
            let res = reload(&state, &s.id).await;
            state.sources.spawn_catalog_refresh(s.id.clone());
            if res.status() == StatusCode::OK {
                let mut r = res;
                *r.status_mut() = StatusCode::CREATED;
                r
            } else {
                res
            }
        }
        Err(e) => control_error(e),
    }
}

pub async fn update(
    caller: Admin<Operators>,
    path: web::Path<String>,
    body: web::Json<sources::SourceChanges>,
    state: web::Data<AppState>,
) -> HttpResponse {
    match sources::update_source(&state.control, &path, &body).await {
        Ok(s) => {
            audit_log::record(
                &state,
                &caller,
                "admin.source.update",
                Some(&s.id),
                json!({"source": s.id}),
            )
            .await;
            reload(&state, &s.id).await
        }
        Err(e) => control_error(e),
    }
}

pub async fn enable(
    caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    set_enabled(caller, path, state, true).await
}

pub async fn disable(
    caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    set_enabled(caller, path, state, false).await
}

async fn set_enabled(
    caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
    on: bool,
) -> HttpResponse {
    match sources::set_enabled(&state.control, &path, on).await {
        Ok(s) => {
            let tool = if on {
                "admin.source.enable"
            } else {
                "admin.source.disable"
            };
            audit_log::record(&state, &caller, tool, Some(&s.id), json!({"enabled": on})).await;
            reload(&state, &s.id).await
        }
        Err(e) => control_error(e),
    }
}

pub async fn test(
    _caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    match sources::get_source(&state.control, &path).await {
        Ok(s) => HttpResponse::Ok().json(crate::sources::postgres::probe(&s).await),
        Err(e) => control_error(e),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CircuitBody {
    action: ForceAction,
    #[serde(default)]
    reason: String,
    /// With `open`: the force lapses by itself after this many seconds (fleet-wide).
    #[serde(default)]
    for_secs: Option<u64>,
}

pub async fn circuit(
    caller: Admin<Operators>,
    path: web::Path<String>,
    body: web::Json<CircuitBody>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let Some(rt) = state.sources.get(&path) else {
        return error(StatusCode::NOT_FOUND, "not_found", "no source with that id");
    };
    if body.reason.trim().is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "reason_required",
            "say why: {\"action\": \"open\", \"reason\": \"...\"}",
        );
    }
    let until = match (body.action, body.for_secs) {
        (ForceAction::Open, Some(secs)) => {
            let lapse = i64::try_from(secs)
                .ok()
                .filter(|s| (1..=31 * 24 * 3600).contains(s));
            let Some(lapse) = lapse else {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "for_secs must be between 1 and 2678400 (31 days)",
                );
            };
            Some(chrono::Utc::now() + chrono::Duration::seconds(lapse))
        }
        (_, Some(_)) => {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "for_secs applies only to action open",
            )
        }
        (_, None) => None,
    };
    // Fleet-wide first: every replica applies it (and reconciles it from the table).
    if let Err(e) = state
        .fleet
        .circuit(
            &rt.source.id,
            body.action,
            body.reason.trim(),
            &caller.identity.name,
            until,
        )
        .await
    {
        tracing::error!(error = %e, "a forced circuit state could not be stored fleet-wide");
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the circuit state could not be stored for the fleet (control database unavailable); nothing was changed",
        );
    }
    let reason = crate::fleet::forced_reason(body.reason.trim(), &caller.identity.name);
    match rt.breaker.force(body.action, reason).await {
        Ok(t) => {
            audit_log::record(
                &state,
                &caller,
                "admin.circuit",
                Some(&rt.source.id),
                json!({"action": body.action, "reason": body.reason, "transition": t}),
            )
            .await;
            HttpResponse::Ok()
                .json(json!({"source": rt.source.id, "circuit": rt.breaker.snapshot()}))
        }
        Err(e) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            &e.to_string(),
        ),
    }
}

pub async fn refresh_catalog(
    caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    match state.sources.refresh_catalog(&path).await {
        Ok(at) => {
            audit_log::record(
                &state,
                &caller,
                "admin.catalog.refresh",
                Some(&path),
                json!({"scanned_at": at}),
            )
            .await;
            HttpResponse::Ok().json(json!({"source": path.as_str(), "scanned_at": at}))
        }
        Err(e) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            &e.to_string(),
        ),
    }
}

/// `POST /admin/sources/{id}/documents`: JSON lines of documents into a document source.
pub async fn documents(
    caller: Admin<Operators>,
    path: web::Path<String>,
    body: web::Bytes,
    state: web::Data<AppState>,
) -> HttpResponse {
    let Some(rt) = state.sources.get(&path) else {
        return error(StatusCode::NOT_FOUND, "not_found", "no source with that id");
    };
    if rt.source.kind != sources::SourceKind::Documents {
        return error(
            StatusCode::BAD_REQUEST,
            "not_a_document_source",
            "documents can only be added to a document source",
        );
    }
    let text = String::from_utf8_lossy(&body);
    let assets = match crate::discovery::parse_json_lines(&text) {
        Ok(a) => a,
        Err(e) => return error(StatusCode::BAD_REQUEST, "invalid_documents", &e.to_string()),
    };
    let result = async {
        let mut client = state.control.get().await.map_err(|e| e.to_string())?;
        let tx = client.transaction().await.map_err(|e| e.to_string())?;
        let n = crate::discovery::upsert_assets(&tx, &rt.source.id, &assets)
            .await
            .map_err(|e| e.to_string())?;
        tx.commit().await.map_err(|e| e.to_string())?;
        Ok::<usize, String>(n)
    }
    .await;
    match result {
        Ok(n) => {
            audit_log::record(
                &state,
                &caller,
                "admin.documents",
                Some(&rt.source.id),
                json!({"documents": n}),
            )
            .await;
            HttpResponse::Ok().json(json!({"source": rt.source.id, "documents": n}))
        }
        Err(e) => error(StatusCode::BAD_REQUEST, "invalid_documents", &e),
    }
}
