//! Gives every request an id, a tracing span carrying it, and an `X-Request-Id` response
//! header. A client-supplied id is kept when it is short and printable, so a caller can
//! correlate its own logs; otherwise a fresh UUID is used.

use std::future::{ready, Ready};

use actix_web::dev::{forward_ready, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::HttpMessage;
use futures_util::future::LocalBoxFuture;
use tracing::Instrument;

pub const HEADER: &str = "x-request-id";

/// The id of the current request, stored in request extensions.
#[derive(Debug, Clone)]
pub struct RequestIdValue(pub String);

/// The request's id as the request-id middleware assigned it (a fresh one when the
/// middleware did not run, e.g. in a unit test of a handler).
pub fn of(req: &impl actix_web::HttpMessage) -> String {
    req.extensions()
        .get::<RequestIdValue>()
        .map_or_else(|| uuid::Uuid::new_v4().to_string(), |r| r.0.clone())
}

pub struct RequestId;

impl<S, B> Transform<S, ServiceRequest> for RequestId
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: 'static,
{
    type Response = ServiceResponse<B>;
    type Error = actix_web::Error;
    type Transform = RequestIdMiddleware<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(RequestIdMiddleware { service }))
    }
}

pub struct RequestIdMiddleware<S> {
    service: S,
}

impl<S, B> Service<ServiceRequest> for RequestIdMiddleware<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = actix_web::Error> + 'static,
    B: 'static,
{
    type Response = ServiceResponse<B>;
    type Error = actix_web::Error;
    type Future = LocalBoxFuture<'static, Result<Self::Response, Self::Error>>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        let id = req
            .headers()
            .get(HEADER)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty() && v.len() <= 64 && v.bytes().all(|b| b.is_ascii_graphic()))
            .map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_string);
        req.extensions_mut().insert(RequestIdValue(id.clone()));
        let span = tracing::info_span!("request", request_id = %id, method = %req.method(), path = %req.path());
        let fut = self.service.call(req);
        Box::pin(
            async move {
                let mut res = fut.await?;
                tracing::debug!(status = res.status().as_u16(), "response");
                if let Ok(v) = HeaderValue::from_str(&id) {
                    res.headers_mut().insert(HeaderName::from_static(HEADER), v);
                }
                Ok(res)
            }
            .instrument(span),
        )
    }
}
