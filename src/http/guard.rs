//! The edge guard, run on every request of the governed routes before any dispatch — also on
//! each request of a reused keep-alive connection, since it is per request by construction:
//! Host allowlist (DNS rebinding) → Origin → bound on in-flight requests.

use std::future::{ready, Ready};
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{forward_ready, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::HttpResponse;
use futures_util::future::LocalBoxFuture;
use serde_json::json;

use crate::cidr::IpNet;

/// The edge policy, built once from settings.
#[derive(Debug, Clone)]
pub struct EdgePolicy {
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    max_in_flight: usize,
    in_flight: Arc<AtomicUsize>,
    trusted_proxies: Vec<IpNet>,
}

impl EdgePolicy {
    pub fn new(
        bind: IpAddr,
        allowed_hosts: &[String],
        allowed_origins: &[String],
        max_in_flight: usize,
        trusted_proxies: &[IpNet],
    ) -> Self {
        let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
        if !bind.is_unspecified() {
            hosts.push(bind.to_string());
        }
        hosts.extend(allowed_hosts.iter().map(|h| h.to_ascii_lowercase()));
        Self {
            allowed_hosts: hosts,
            allowed_origins: allowed_origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
            max_in_flight,
            in_flight: Arc::new(AtomicUsize::new(0)),
            trusted_proxies: trusted_proxies.to_vec(),
        }
    }

    /// Host header → allowed? It must parse as a plain authority ([`super::host`]); then
    /// its name matches a listed host, or `name:port` matches a listed `host:port`.
    pub fn host_allowed(&self, host: &str) -> bool {
        let Some(authority) = super::host::parse(host) else {
            return false;
        };
        if self.allowed_hosts.contains(&authority.name) {
            return true;
        }
        let Some(port) = authority.port else {
            return false;
        };
        let with_port = if authority.name.contains(':') {
            format!("[{}]:{port}", authority.name)
        } else {
            format!("{}:{port}", authority.name)
        };
        self.allowed_hosts.contains(&with_port)
    }

    /// Whether forwarding headers (`Forwarded`, `X-Forwarded-*`) may be believed for a
    /// request from `peer`: only from a configured proxy.
    pub fn trusts_forwarding(&self, peer: Option<IpAddr>) -> bool {
        peer.is_some_and(|ip| self.trusted_proxies.iter().any(|net| net.contains(ip)))
    }

    /// Origin header → allowed? Absent is allowed (non-browser clients); present must be the
    /// request's own origin or listed.
    pub fn origin_allowed(&self, origin: Option<&str>, own_origin: &str) -> bool {
        let Some(origin) = origin else { return true };
        let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
        origin == own_origin.to_ascii_lowercase() || self.allowed_origins.contains(&origin)
    }
}

fn refusal(
    status: actix_web::http::StatusCode,
    code: i64,
    key: &str,
    message: &str,
) -> HttpResponse {
    HttpResponse::build(status).json(json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message, "data": {"status": status.as_u16(), "code": key, "reason": message}}
    }))
}

/// Audits a refusal of the edge guard (no caller is known yet: aggregated per peer).
fn audit_edge(req: &ServiceRequest, code: &str, rule: &'static str, reason: &str, status: u16) {
    let Some(state) = req.app_data::<actix_web::web::Data<crate::AppState>>() else {
        return;
    };
    let request_id = super::request_id::of(req);
    super::refusal_trail::mark(req);
    state.refusals.record(
        crate::pipeline::refusal_audit::EarlyRefusal {
            request_id,
            adapter: "edge",
            target: format!("{} {}", req.method(), req.path()),
            code: code.to_string(),
            step: "edge",
            rule,
            reason: reason.to_string(),
            status,
            peer: req.peer_addr().map(|a| a.ip()),
        },
        None,
    );
}

pub struct EdgeGuard(pub EdgePolicy);

impl<S, B> Transform<S, ServiceRequest> for EdgeGuard
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = actix_web::Error;
    type Transform = EdgeGuardMiddleware<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(EdgeGuardMiddleware {
            service: Rc::new(service),
            policy: self.0.clone(),
        }))
    }
}

pub struct EdgeGuardMiddleware<S> {
    service: Rc<S>,
    policy: EdgePolicy,
}

/// Decrements the in-flight count when the request (including a streamed body) is done.
struct InFlightSlot(Arc<AtomicUsize>);

impl Drop for InFlightSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<S, B> Service<ServiceRequest> for EdgeGuardMiddleware<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self::Response, Self::Error>>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        use actix_web::http::StatusCode;
        let host = req
            .headers()
            .get("host")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if !self.policy.host_allowed(&host) {
            audit_edge(
                &req,
                "forbidden_host",
                "Host allowlist",
                "Host not allowed",
                403,
            );
            let res = refusal(
                StatusCode::FORBIDDEN,
                -32600,
                "forbidden_host",
                "Host not allowed",
            );
            return Box::pin(async move { Ok(req.into_response(res)) });
        }
        // The request's own origin: from forwarding headers only behind a trusted proxy.
        let peer = req.peer_addr().map(|a| a.ip());
        let scheme = if self.policy.trusts_forwarding(peer) {
            req.connection_info().scheme().to_string()
        } else if req.app_config().secure() {
            "https".to_string()
        } else {
            "http".to_string()
        };
        let own = format!("{scheme}://{host}");
        let origin = req
            .headers()
            .get("origin")
            .map(|v| v.to_str().unwrap_or("\u{0}"));
        if !self.policy.origin_allowed(origin, &own) {
            audit_edge(
                &req,
                "forbidden_origin",
                "Origin allowlist",
                "Origin not allowed",
                403,
            );
            let res = refusal(
                StatusCode::FORBIDDEN,
                -32600,
                "forbidden_origin",
                "Origin not allowed",
            );
            return Box::pin(async move { Ok(req.into_response(res)) });
        }
        let counter = self.policy.in_flight.clone();
        if counter.fetch_add(1, Ordering::AcqRel) >= self.policy.max_in_flight {
            counter.fetch_sub(1, Ordering::AcqRel);
            let res = refusal(
                StatusCode::SERVICE_UNAVAILABLE,
                -32603,
                "server_busy",
                "too many requests in flight; retry shortly",
            );
            let mut res = res;
            res.headers_mut().insert(
                actix_web::http::header::RETRY_AFTER,
                actix_web::http::header::HeaderValue::from_static("1"),
            );
            return Box::pin(async move { Ok(req.into_response(res)) });
        }
        metrics::gauge!("interlock_in_flight_requests").set(counter.load(Ordering::Relaxed) as f64);
        let slot = InFlightSlot(counter);
        let svc = self.service.clone();
        Box::pin(async move {
            let res = svc.call(req).await?;
            // The slot lives until the (possibly streamed) body is finished.
            Ok(res.map_body(move |_, body| {
                BoxBody::new(SlotBody {
                    body: BoxBody::new(body),
                    _slot: slot,
                })
            }))
        })
    }
}

/// A body that holds the in-flight slot until it is dropped.
struct SlotBody {
    body: BoxBody,
    _slot: InFlightSlot,
}

impl MessageBody for SlotBody {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> actix_web::body::BodySize {
        self.body.size()
    }

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<actix_web::web::Bytes, Self::Error>>> {
        std::pin::Pin::new(&mut self.get_mut().body).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> EdgePolicy {
        EdgePolicy::new(
            "127.0.0.1".parse().unwrap_or(IpAddr::from([127, 0, 0, 1])),
            &["gw.internal".into()],
            &["https://console.example".into()],
            10,
            &IpNet::parse("10.0.0.0/8").into_iter().collect::<Vec<_>>(),
        )
    }

    #[test]
    fn forwarding_is_trusted_only_from_listed_proxies() {
        let p = policy();
        let ip = |s: &str| s.parse::<IpAddr>().ok();
        assert!(p.trusts_forwarding(ip("10.1.2.3")));
        assert!(!p.trusts_forwarding(ip("11.0.0.1")));
        assert!(!p.trusts_forwarding(ip("127.0.0.1")));
        assert!(!p.trusts_forwarding(ip("::1")));
        assert!(!p.trusts_forwarding(None));
    }

    #[test]
    fn hosts_are_checked_by_name() {
        let p = policy();
        let cases = [
            ("127.0.0.1:8080", true),
            ("localhost:8080", true),
            ("[::1]:8080", true),
            ("gw.internal", true),
            ("GW.INTERNAL:443", true),
            ("evil.example:8080", false),
            ("127.0.0.1.evil.example", false),
            ("[localhost]evil.example", false),
            ("[::1]evil.example", false),
            ("localhost:8080:8080", false),
            ("user@localhost", false),
            ("", false),
        ];
        for (host, want) in cases {
            assert_eq!(p.host_allowed(host), want, "{host}");
        }
    }

    #[test]
    fn origins_must_be_own_or_listed() {
        let p = policy();
        let own = "http://127.0.0.1:8080";
        let cases = [
            (None, true),
            (Some("http://127.0.0.1:8080"), true),
            (Some("https://console.example"), true),
            (Some("https://console.example/"), true),
            (Some("http://evil.example"), false),
            (Some("http://127.0.0.1:9999"), false),
            (Some("null"), false),
        ];
        for (origin, want) in cases {
            assert_eq!(p.origin_allowed(origin, own), want, "{origin:?}");
        }
    }
}
