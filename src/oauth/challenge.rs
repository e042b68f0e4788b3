//! `WWW-Authenticate` challenges (RFC 6750, RFC 9728). Every adapter refuses with the bare
//! challenge of [`for_refusal`]; when OAuth is on, [`complete`] (a middleware on the whole
//! app) adds where the protected-resource metadata is and the scope the route needs, so MCP
//! clients can discover the authorization server from any 401.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderValue, WWW_AUTHENTICATE};
use actix_web::middleware::Next;
use actix_web::web;

use crate::AppState;

/// The challenge a refusal answers with: `Bearer` for a missing or unknown credential,
/// with `error="invalid_token"` for a token that did not verify, and
/// `error="insufficient_scope"` (403) for one without the route's scope.
pub fn for_refusal(status: u16, code: &str) -> Option<&'static str> {
    match (status, code) {
        (401, "invalid_token") => Some("Bearer error=\"invalid_token\""),
        (401, _) => Some("Bearer"),
        (403, "insufficient_scope") => Some("Bearer error=\"insufficient_scope\""),
        _ => None,
    }
}

/// Where the protected-resource metadata of `resource` is (RFC 9728 §3.1).
pub fn metadata_url(resource: &str) -> String {
    super::well_known::url(resource, "oauth-protected-resource")
}

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
        metadata_url(&settings.resource)
    ));
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        res.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::for_refusal;

    #[test]
    fn refusals_challenge_as_rfc_6750_says() {
        let cases = [
            (401, "unauthenticated", Some("Bearer")),
            (401, "invalid_token", Some("Bearer error=\"invalid_token\"")),
            (
                403,
                "insufficient_scope",
                Some("Bearer error=\"insufficient_scope\""),
            ),
            (403, "forbidden", None),
            (429, "rate_limited", None),
        ];
        for (status, code, want) in cases {
            assert_eq!(for_refusal(status, code), want, "{status} {code}");
        }
    }
}
