//! `GET /.well-known/oauth-protected-resource` (and the form suffixed with the MCP
//! endpoint's path): the protected-resource metadata of RFC 9728, from which MCP clients
//! learn which authorization server issues tokens for this gateway. 404 while OAuth is off.

use actix_web::{web, HttpResponse};
use serde_json::json;

use crate::AppState;

pub async fn document(state: web::Data<AppState>) -> HttpResponse {
    let Some(oauth) = state.oauth.as_ref() else {
        return HttpResponse::NotFound().json(json!({
            "error": "this gateway accepts API keys only (oauth.enabled is false)",
            "code": "not_found",
        }));
    };
    let s = &oauth.settings;
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "public, max-age=300"))
        .json(json!({
            "resource": s.resource,
            "authorization_servers": s.authorization_servers(),
            "scopes_supported": [s.tools_scope, s.admin_scope],
            "bearer_methods_supported": ["header"],
            "resource_name": "InterLock",
        }))
}

/// The routes: the bare form and the path-suffixed form of the resource identifier.
pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route(
        "/.well-known/oauth-protected-resource",
        web::get().to(document),
    )
    .route(
        "/.well-known/oauth-protected-resource/{path:.*}",
        web::get().to(document),
    );
}
