//! `GET /healthz` (the process answers) and `GET /readyz` (it can serve governed calls).

use actix_web::{web, HttpResponse};
use interlock_actors::supervise::ActorStatus;
use serde_json::{json, Value};

use crate::control::migrate;
use crate::AppState;

pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok", "version": crate::VERSION}))
}

/// Ready when the control database answers, every migration is applied and every actor is
/// up. The body says which actors are down and which were restarted, and how their last
/// incarnation ended (breakers are named by kind only: this endpoint needs no key, and
/// source ids are for callers who may see them, in `GET /admin/actors`).
/// How long `/readyz` waits for the control database before answering 503.
const READY_CHECK: std::time::Duration = std::time::Duration::from_millis(1500);

pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let actors = actors_detail(&state.supervision.statuses());
    let fleet = json!({
        "replica": state.fleet.replica(),
        "channel": if state.fleet.channel_up() { "up" } else { "down: result cache TTL capped" },
    });
    let down = actors["down"].as_array().map_or(0, Vec::len);
    // A probe must answer at once: a control database that does not answer within
    // READY_CHECK is unreachable for this replica, whatever its sockets still believe.
    let checked = tokio::time::timeout(READY_CHECK, migrate::pending_reason(&state.control)).await;
    match checked {
        Ok(Ok(None)) if down == 0 => {
            let mut body = json!({"status": "ready", "actors": actors, "fleet": fleet});
            // Anchoring never makes a replica unready; it is shown so a stuck TSA is seen.
            if state.checkpoint_key.is_some() {
                if let Ok(a) = state.anchoring.read() {
                    body["audit_anchoring"] = json!(*a);
                }
            }
            HttpResponse::Ok().json(body)
        }
        Ok(Ok(None)) => {
            let names: Vec<&str> = actors["down"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            not_ready(format!("actors down: {}", names.join(", ")), actors, fleet)
        }
        Ok(Ok(Some(reason))) => not_ready(reason, actors, fleet),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness check failed");
            not_ready("control database unreachable".to_string(), actors, fleet)
        }
        Err(_) => not_ready(
            format!(
                "control database unreachable (no answer within {} ms)",
                READY_CHECK.as_millis()
            ),
            actors,
            fleet,
        ),
    }
}

fn not_ready(reason: String, actors: Value, fleet: Value) -> HttpResponse {
    HttpResponse::ServiceUnavailable()
        .insert_header(("Retry-After", "1"))
        .json(json!({"status": "not_ready", "reason": reason, "actors": actors, "fleet": fleet}))
}

/// `{"up": n, "down": [names], "restarted": [{actor, restarts, last_failure, since}]}`.
fn actors_detail(all: &[ActorStatus]) -> Value {
    let public = |name: &str| -> String {
        match name.split_once(':') {
            Some((kind, _source)) => kind.to_string(),
            None => name.to_string(),
        }
    };
    let down: Vec<String> = all
        .iter()
        .filter(|a| !a.up)
        .map(|a| public(&a.actor))
        .collect();
    let restarted: Vec<Value> = all
        .iter()
        .filter(|a| a.restarts > 0)
        .map(|a| {
            json!({
                "actor": public(&a.actor),
                "restarts": a.restarts,
                "last_failure": a.last_failure,
                "since": a.since,
            })
        })
        .collect();
    json!({
        "up": all.len() - down.len(),
        "down": down,
        "restarted": restarted,
    })
}
