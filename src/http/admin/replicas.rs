//! `GET /admin/replicas`: the replicas sharing this control database (operators), and the
//! fleet's view of one source's circuit for `GET /admin/sources/{id}`.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde_json::{json, Value};

use super::auth::{error, Admin, Operators};
use crate::control::fleet::{self as tables, Replica};
use crate::control::{instances, ControlError};
use crate::AppState;

/// Live replicas (their instance lock is held), and those gone but not yet forgotten.
pub async fn list(_caller: Admin<Operators>, state: web::Data<AppState>) -> HttpResponse {
    match registry(&state).await {
        Ok((live, gone)) => HttpResponse::Ok().json(json!({
            "this": state.fleet.replica(),
            "replicas": live.iter().map(|r| replica_json(r, &state)).collect::<Vec<_>>(),
            "gone": gone.iter().map(|r| replica_json(r, &state)).collect::<Vec<_>>(),
        })),
        Err(e) => {
            tracing::warn!(error = %e, "replica registry unavailable");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "the replica registry could not be read (control database unavailable)",
            )
        }
    }
}

/// The fleet's view of `source`: the fleet-wide forced state, and each live replica's own
/// breaker as it last reported it.
pub async fn circuit_view(state: &AppState, source: &str) -> Value {
    let forced = tables::override_of(&state.control, source)
        .await
        .ok()
        .flatten();
    let replicas = registry(state).await.map_or_else(
        |_| Value::Null,
        |(live, _)| {
            live.iter()
                .map(|r| {
                    json!({
                        "replica": r.id,
                        "address": r.address,
                        "this": r.id == state.fleet.replica(),
                        "reported_at": r.heartbeat_at,
                        "circuit": r.circuits.get(source).cloned().unwrap_or(Value::Null),
                    })
                })
                .collect()
        },
    );
    json!({"forced": forced, "replicas": replicas})
}

async fn registry(state: &AppState) -> Result<(Vec<Replica>, Vec<Replica>), ControlError> {
    let client = state.control.get().await?;
    let mut live = Vec::new();
    let mut gone = Vec::new();
    for r in tables::replicas(&**client).await? {
        if instances::instance_dead(&**client, r.instance_id).await? {
            gone.push(r);
        } else {
            live.push(r);
        }
    }
    Ok((live, gone))
}

fn replica_json(r: &Replica, state: &AppState) -> Value {
    json!({
        "id": r.id,
        "this": r.id == state.fleet.replica(),
        "address": r.address,
        "version": r.version,
        "started_at": r.started_at,
        "heartbeat_at": r.heartbeat_at,
        "circuits": r.circuits,
    })
}
