//! The server span of an HTTP request (RUNTIME.md, "Traces"): HTTP server attributes from
//! the request, MCP and JSON-RPC ones from its message, and as parent the trace context the
//! caller sent: `params._meta.traceparent` when the message carries one (it travels with
//! the message through proxies and stdio bridges), else the `traceparent` header.

use std::time::{Instant, SystemTime};

use actix_web::{HttpMessage, HttpRequest};

use crate::mcp::MessageFacts;
use crate::telemetry::traces::names;
use crate::telemetry::traces::propagation::remote_parent;
use crate::telemetry::traces::{KeyValue, ServerSpan};
use crate::AppState;

/// The request has its server span (requests without one get [`super::untraced`]'s).
#[derive(Debug, Clone, Copy)]
pub struct Spanned;

/// The span of `req`, begun when it arrived (`started`), with `route` (the matched
/// template; empty when none matched) as `http.route`; named after the message when
/// `message` is given (which adds the MCP facts and may carry the parent), else
/// `<METHOD> <route>`, or `<METHOD>` alone.
pub fn server_span(
    state: &AppState,
    req: &HttpRequest,
    started: Instant,
    route: &str,
    message: Option<&MessageFacts>,
) -> ServerSpan {
    if !state.tracing.is_on() {
        return ServerSpan::off();
    }
    req.extensions_mut().insert(Spanned);
    let headers: Vec<(String, String)> = ["traceparent", "tracestate"]
        .into_iter()
        .filter_map(|k| {
            req.headers()
                .get(k)
                .and_then(|v| v.to_str().ok())
                .map(|v| (k.to_string(), v.to_string()))
        })
        .collect();
    let parent = message
        .and_then(|m| remote_parent(&m.trace_meta))
        .or_else(|| remote_parent(&headers));
    let began = SystemTime::now()
        .checked_sub(started.elapsed())
        .unwrap_or_else(SystemTime::now);
    let name = message
        .and_then(MessageFacts::span_name)
        .unwrap_or_else(|| match route {
            "" => req.method().to_string(),
            _ => format!("{} {route}", req.method()),
        });
    state.tracing.server(name, began, parent, || {
        let mut kv = vec![
            KeyValue::new("http.request.method", req.method().to_string()),
            KeyValue::new("url.path", req.path().to_string()),
            KeyValue::new("url.scheme", req.connection_info().scheme().to_string()),
            KeyValue::new(names::REQUEST_ID, crate::http::request_id::of(req)),
        ];
        if !route.is_empty() {
            kv.push(KeyValue::new("http.route", route.to_string()));
        }
        if let Some(peer) = req.peer_addr() {
            kv.push(KeyValue::new("client.address", peer.ip().to_string()));
        }
        if let Some(agent) = req
            .headers()
            .get("user-agent")
            .and_then(|v| v.to_str().ok())
        {
            kv.push(KeyValue::new(
                "user_agent.original",
                agent.chars().take(256).collect::<String>(),
            ));
        }
        if let Some(m) = message {
            kv.extend(
                m.span_attributes()
                    .into_iter()
                    .map(|(k, v)| KeyValue::new(k, v)),
            );
        }
        kv
    })
}
