//! Completing `WWW-Authenticate` challenges (RFC 9728). Every adapter refuses with the bare
//! challenge of [`crate::mcp::bearer_challenge`]; when OAuth is on, [`complete`] (a
//! middleware on the whole app) adds where the protected-resource metadata is and the scope
//! the route needs, so MCP clients can discover the authorization server from any 401.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderValue, WWW_AUTHENTICATE};
use actix_web::middleware::Next;
use actix_web::web;

use crate::AppState;

/// Completes the `Bearer` challenge of a response with `resource_metadata` and `scope`.
pub async fn complete(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let admin = req.path().starts_with("/admin");
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let mut res = next.call(req).await?;
    let Some(oauth) = state.as_ref().and_then(|s| s.oauth.as_ref()) else {
        return Ok(res);
    };
    let Some(bare) = res
        .headers()
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.starts_with("Bearer") && !v.contains("resource_metadata"))
    else {
        return Ok(res);
    };
    let settings = &oauth.settings;
    let scope = if admin {
        &settings.admin_scope
    } else {
        &settings.tools_scope
    };
    let mut challenge = bare.to_string();
    challenge.push_str(if challenge == "Bearer" { " " } else { ", " });
    challenge.push_str(&format!(
        "resource_metadata=\"{}\", scope=\"{scope}\"",
        crate::oauth::well_known::protected_resource_metadata(&settings.resource)
    ));
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        res.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    Ok(res)
}
