//! A server span for the requests no handler traced: every request on the governed routes
//! (`/mcp`, `/mcp/…`, `/v1/…`) that was answered before, or without, a handler's own span
//! (refused by the edge guard or the one-credential rule, by the framework's body limits or
//! an unknown method, or a route that has no span of its own), and every refusal or failure
//! of the admin API (health probes and unknown paths elsewhere are not traced). Such a span
//! has the HTTP attributes, the caller's parent, the status and, for a 4xx or 5xx, the
//! refusal's code (`error.type`, `interlock.refusal.code`); so "I was refused" always has a
//! trace, whichever layer refused.

use std::time::Instant;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage};

use super::trace::{server_span, Spanned};
use crate::AppState;

/// Middleware body for `App::wrap(from_fn(span_untraced))`, inside the request id.
pub async fn span_untraced(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let started = Instant::now();
    let state = req
        .app_data::<web::Data<AppState>>()
        .filter(|s| s.tracing.is_on())
        .cloned();
    let res = next
        .call(req)
        .await
        .map(ServiceResponse::map_into_boxed_body)?;
    let Some(state) = state else {
        return Ok(res);
    };
    let status = res.status();
    let failed = status.is_client_error() || status.is_server_error();
    let path = res.request().path();
    if res.request().extensions().get::<Spanned>().is_some()
        || !(governed(path) || (failed && under(path, "/admin")))
    {
        return Ok(res);
    }
    let (res, said) = if failed {
        super::refusal_answer::read(res).await
    } else {
        (res, None)
    };
    let req = res.request();
    // A path no route matched names no route: the span is named by its method alone (a
    // scanner's paths would otherwise each name a span).
    let route = req.match_pattern().unwrap_or_default();
    let span = server_span(&state, req, started, &route, None);
    span.status(status.as_u16());
    if failed {
        let (code, _) = super::refusal_answer::code_and_reason(said.as_ref(), status);
        span.refused_early(&code);
    }
    Ok(res)
}

/// The routes whose every request is traced.
fn governed(path: &str) -> bool {
    under(path, "/mcp") || under(path, "/v1")
}

/// `path` is `prefix` or below it (`/v1/…`, not `/v10`).
pub(super) fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_governed_routes_are_mcp_and_the_proxy() {
        for (path, want) in [
            ("/mcp", true),
            ("/mcp/tools/list", true),
            ("/v1/sources/shop/query", true),
            ("/v1", true),
            ("/v10", false),
            ("/mcpx", false),
            ("/admin/sources", false),
            ("/console", false),
            ("/healthz", false),
        ] {
            assert_eq!(governed(path), want, "{path}");
        }
    }
}
