//! The admin API under `/admin`, for approvers and operators, authenticated with their keys.
//!
//! | route | who |
//! |---|---|
//! | `GET /admin/approvals`, `GET /admin/approvals/{id}` | approvers (their sources), operators (all) |
//! | `POST /admin/approvals/{id}/approve`, `/reject` | approvers scoped to the source |
//! | `GET /admin/events` (SSE) | approvers (approval events of their sources), operators (all) |
//! | sources, circuits, identities, audit | operators |

// Handlers return early with a ready `HttpResponse` as their error; boxing it buys nothing.
#![allow(clippy::result_large_err)]

mod approvals;
mod auth;
mod events;

use actix_web::web;

/// The admin routes (the caller wraps them in the edge guard).
pub fn routes() -> actix_web::Scope {
    web::scope("/admin")
        .route("/approvals", web::get().to(approvals::list))
        .route("/approvals/{id}", web::get().to(approvals::show))
        .route(
            "/approvals/{id}/approve",
            web::post().to(approvals::approve),
        )
        .route("/approvals/{id}/reject", web::post().to(approvals::reject))
        .route("/events", web::get().to(events::stream))
}
