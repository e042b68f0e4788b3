//! The admin API under `/admin`, for approvers and operators, authenticated with their keys.
//!
//! | route | who |
//! |---|---|
//! | `GET /admin/approvals`, `GET /admin/approvals/{id}` | approvers (their sources), operators (all) |
//! | `POST /admin/approvals/{id}/approve` (`max_rows` bounds the effect), `/reject` | approvers scoped to the source |
//! | `POST /admin/approvals/{id}/preview` (compute the effect preview again) | approvers (their sources), operators |
//! | `GET /admin/events` (SSE) | approvers (approval events of their sources), operators (all) |
//! | `GET /admin/whoami` | approvers and operators: name, kind, approver scopes |
//! | `POST /admin/policy/simulate` (recorded calls replayed under a candidate access file), `POST /admin/policy/explain` (one call, rule by rule), `GET /admin/policy/reported` (report-only rules over time) | operators |
//! | `GET /admin/activity` (the fleet's calls minute by minute, circuit history, approvals over time) | operators |
//! | sources, circuits, actors, replicas, webhooks, identities (`POST /admin/identities/{name}/tokens/revoke` refuses the identity's access tokens issued until now), audit | operators |

// Handlers return early with a ready `HttpResponse` as their error; boxing it buys nothing.
#![allow(clippy::result_large_err)]

mod activity;
mod actors;
mod approvals;
mod audit;
mod audit_log;
mod auth;
mod chart_window;
pub mod checkpoints;
mod events;
mod gate;
mod identities;
mod nul_text;
pub mod partitions;
mod policy;
mod replicas;
mod sources;
mod webhooks;

use actix_web::web;

/// Refuses (401/403) every caller but an operator; for routes outside `/admin` (whose
/// handlers take the [`auth::Admin`] extractor instead).
pub async fn require_operator(
    req: &actix_web::HttpRequest,
    state: &crate::AppState,
) -> Result<(), actix_web::HttpResponse> {
    use crate::control::identities::IdentityKind;
    auth::admin(req, state, &[IdentityKind::Operator])
        .await
        .map(|_| ())
}

/// The admin routes (the caller wraps them in the edge guard).
pub fn routes() -> actix_web::Scope<
    impl actix_web::dev::ServiceFactory<
        actix_web::dev::ServiceRequest,
        Config = (),
        Response = actix_web::dev::ServiceResponse<actix_web::body::BoxBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    web::scope("/admin")
        .wrap(actix_web::middleware::from_fn(gate::gate))
        .route("/approvals", web::get().to(approvals::list))
        .route("/approvals/{id}", web::get().to(approvals::show))
        .route(
            "/approvals/{id}/approve",
            web::post().to(approvals::approve),
        )
        .route("/approvals/{id}/reject", web::post().to(approvals::reject))
        .route(
            "/approvals/{id}/preview",
            web::post().to(approvals::refresh_preview),
        )
        .route("/events", web::get().to(events::stream))
        .route("/whoami", web::get().to(auth::whoami))
        .route("/actors", web::get().to(actors::list))
        .route("/replicas", web::get().to(replicas::list))
        .route("/webhooks", web::get().to(webhooks::list))
        .route("/webhooks", web::post().to(webhooks::create))
        .route("/webhooks/{id}", web::delete().to(webhooks::delete))
        .route("/webhooks/{id}/test", web::post().to(webhooks::test))
        .route("/webhooks/{id}/rotate", web::post().to(webhooks::rotate))
        .route("/webhooks/{id}/pause", web::post().to(webhooks::pause))
        .route("/webhooks/{id}/resume", web::post().to(webhooks::resume))
        .route(
            "/webhooks/{id}/deliveries",
            web::get().to(webhooks::deliveries),
        )
        .route("/sources", web::get().to(sources::list))
        .route("/sources", web::post().to(sources::create))
        .route("/sources/{id}", web::get().to(sources::show))
        .route("/sources/{id}", web::patch().to(sources::update))
        .route("/sources/{id}/enable", web::post().to(sources::enable))
        .route("/sources/{id}/disable", web::post().to(sources::disable))
        .route("/sources/{id}/test", web::post().to(sources::test))
        .route("/sources/{id}/circuit", web::post().to(sources::circuit))
        .route(
            "/sources/{id}/catalog/refresh",
            web::post().to(sources::refresh_catalog),
        )
        .route(
            "/sources/{id}/documents",
            web::post().to(sources::documents),
        )
        .route("/identities", web::get().to(identities::list))
        .route("/identities", web::post().to(identities::create))
        .route(
            "/identities/{name}/keys",
            web::post().to(identities::create_key),
        )
        .route(
            "/identities/{name}/grants",
            web::post().to(identities::grant),
        )
        .route(
            "/identities/{name}/grants/{source}/{role}",
            web::delete().to(identities::revoke_grant),
        )
        .route(
            "/identities/{name}/tokens/revoke",
            web::post().to(identities::revoke_tokens),
        )
        .route(
            "/keys/{prefix}/revoke",
            web::post().to(identities::revoke_key),
        )
        .route("/policy/simulate", web::post().to(policy::simulate))
        .route("/policy/explain", web::post().to(policy::explain))
        .route("/policy/reported", web::get().to(policy::reported))
        .route("/activity", web::get().to(activity::activity))
        .route("/audit", web::get().to(audit::list))
        .route("/audit/verify", web::get().to(audit::verify))
        .route("/audit/checkpoints", web::get().to(checkpoints::list))
        .route("/audit/checkpoints", web::post().to(checkpoints::create))
        .route("/audit/partitions", web::get().to(partitions::list))
}
