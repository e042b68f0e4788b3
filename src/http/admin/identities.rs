//! Identities, keys and grants for operators: the same repository functions as the CLI.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;
use serde_json::json;

use super::audit_log;
use super::auth::{control_error, error, Admin, Operators};
use crate::control::identities::{ensure_identity, list_identities, IdentityKind, RateLimit};
use crate::control::{keys, roles, ControlError};
use crate::fleet::Changed;
use crate::AppState;

pub async fn list(_caller: Admin<Operators>, state: web::Data<AppState>) -> HttpResponse {
    let result = async {
        let identities = list_identities(&state.control).await?;
        let all_keys = keys::list_keys(&state.control, None).await?;
        let client = state.control.get().await?;
        let grants = crate::control::roles::list_grants(&client).await?;
        Ok::<_, ControlError>(
            identities
                .iter()
                .map(|i| {
                    json!({
                        "name": i.name,
                        "kind": i.kind,
                        "rate": i.rate,
                        "created_at": i.created_at,
                        "keys": all_keys.iter().filter(|k| k.identity == i.name).collect::<Vec<_>>(),
                        "grants": grants.iter()
                            .filter(|g| g.identity == i.name)
                            .map(|g| json!({"source": g.source, "role": g.role}))
                            .collect::<Vec<_>>(),
                    })
                })
                .collect::<Vec<_>>(),
        )
    }
    .await;
    match result {
        Ok(v) => HttpResponse::Ok().json(json!({"identities": v})),
        Err(e) => control_error(e),
    }
}

/// `POST /admin/identities/{name}/tokens/revoke`: every access token of the identity issued
/// until now is refused (within `identity.cache_ttl_ms` on every replica); its API keys are
/// untouched.
pub async fn revoke_tokens(
    caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    match crate::control::token_identities::revoke_tokens(&state.control, &path).await {
        Ok(at) => {
            state.identities.invalidate_all();
            state.fleet.changed(Changed::Keys).await;
            audit_log::record(
                &state,
                &caller,
                "admin.tokens.revoke",
                None,
                json!({"identity": path.as_str(), "revoked_before": at}),
            )
            .await;
            HttpResponse::Ok().json(json!({"identity": path.as_str(), "tokens_revoked_before": at}))
        }
        Err(e) => control_error(e),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewIdentity {
    name: String,
    kind: IdentityKind,
    rate: Option<String>,
    burst: Option<u32>,
}

pub async fn create(
    caller: Admin<Operators>,
    body: web::Json<NewIdentity>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let rate = match body
        .rate
        .as_deref()
        .map(str::parse::<RateLimit>)
        .transpose()
    {
        Ok(r) => r.map(|mut r| {
            if let Some(b) = body.burst {
                r.burst = b;
            }
            r
        }),
        Err(m) => return error(StatusCode::BAD_REQUEST, "invalid", &m),
    };
    match ensure_identity(&state.control, &body.name, body.kind, rate).await {
        Ok(i) => {
            state.identities.invalidate_all();
            state.fleet.changed(Changed::Keys).await;
            audit_log::record(
                &state,
                &caller,
                "admin.identity.create",
                None,
                json!({"identity": i.name, "kind": i.kind}),
            )
            .await;
            HttpResponse::Created().json(i)
        }
        Err(e) => control_error(e),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    #[serde(default)]
    label: String,
}

pub async fn create_key(
    caller: Admin<Operators>,
    path: web::Path<String>,
    body: Option<web::Json<NewKey>>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let label = body.map(|b| b.into_inner().label).unwrap_or_default();
    match keys::create_key(&state.control, &path, &label).await {
        Ok(k) => {
            audit_log::record(
                &state,
                &caller,
                "admin.key.create",
                None,
                json!({"identity": k.identity, "prefix": k.prefix}),
            )
            .await;
            HttpResponse::Created().json(
                json!({"identity": k.identity, "prefix": k.prefix, "key": k.key,
                                                "note": "the key is shown only this once"}),
            )
        }
        Err(e) => control_error(e),
    }
}

pub async fn revoke_key(
    caller: Admin<Operators>,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> HttpResponse {
    match keys::revoke_key(&state.control, &path).await {
        Ok(k) => {
            state.identities.invalidate_all();
            state.fleet.changed(Changed::Keys).await;
            audit_log::record(
                &state,
                &caller,
                "admin.key.revoke",
                None,
                json!({"identity": k.identity, "prefix": k.prefix}),
            )
            .await;
            HttpResponse::Ok().json(k)
        }
        Err(e) => control_error(e),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    source: String,
    role: String,
}

pub async fn grant(
    caller: Admin<Operators>,
    path: web::Path<String>,
    body: web::Json<Grant>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let result = async {
        let client = state.control.get().await?;
        roles::grant_role(&client, &path, &body.source, &body.role).await
    }
    .await;
    match result {
        Ok(()) => {
            state.profiles.invalidate_all();
            state.fleet.changed(Changed::Grants).await;
            audit_log::record(
                &state,
                &caller,
                "admin.grant",
                Some(&body.source),
                json!({"identity": path.as_str(), "role": body.role}),
            )
            .await;
            HttpResponse::Ok().json(json!({"identity": path.as_str(), "source": body.source, "role": body.role, "granted": true}))
        }
        Err(e) => control_error(e),
    }
}

pub async fn revoke_grant(
    caller: Admin<Operators>,
    path: web::Path<(String, String, String)>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let (identity, source, role) = path.into_inner();
    let result = async {
        let client = state.control.get().await?;
        roles::revoke_role(&client, &identity, &source, &role).await
    }
    .await;
    match result {
        Ok(true) => {
            state.profiles.invalidate_all();
            state.fleet.changed(Changed::Grants).await;
            audit_log::record(
                &state,
                &caller,
                "admin.revoke",
                Some(&source),
                json!({"identity": identity, "role": role}),
            )
            .await;
            HttpResponse::Ok().json(
                json!({"identity": identity, "source": source, "role": role, "granted": false}),
            )
        }
        Ok(false) => error(StatusCode::NOT_FOUND, "not_found", "no such grant"),
        Err(e) => control_error(e),
    }
}
