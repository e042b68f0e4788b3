//! Streamable HTTP: one `POST` per JSON-RPC message to an existing endpoint.
//!
//! Every POST sends `Content-Type: application/json`, `Accept: application/json,
//! text/event-stream`, the API key as `Authorization: Bearer` when `INTERLOCK_API_KEY` is
//! set, and the framing headers the dialect asks for. A reply is read as JSON or as a
//! request-scoped event stream (progress notifications forwarded, keep-alive comments
//! skipped). JSON-RPC error bodies are read whatever the HTTP status (the modern dialect
//! answers refusals with 4xx); a non-2xx reply without one is a transport failure. No
//! session id is minted or required, and no standalone `GET` stream is opened.

use futures_util::StreamExt;
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Client, Response, Url};

use crate::client::error::ClientError;
use crate::client::message::{id_matches, parse_incoming, Incoming, Notification, Reply, Request};
use crate::client::transport::headers::{self, essence, is_loopback_host, mirror_value};
use crate::client::transport::sse::SseParser;
use crate::client::transport::{
    forward_progress, snippet, Answer, BoxFuture, Framing, ProgressSink, Transport, TransportKind,
};

/// Largest response body read (bytes).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A connection to an existing Streamable HTTP endpoint.
pub struct HttpTransport {
    client: Client,
    endpoint: Url,
    api_key: Option<String>,
}

impl HttpTransport {
    /// A transport for `endpoint`; nothing is sent yet. Loopback endpoints bypass proxies.
    pub fn new(endpoint: &str, api_key: Option<String>) -> Result<Self, ClientError> {
        let endpoint = Url::parse(endpoint).map_err(|e| {
            ClientError::Usage(format!("--endpoint {endpoint:?} is not a URL: {e}"))
        })?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(ClientError::Usage(format!(
                "--endpoint must be an http:// or https:// URL, not {}",
                endpoint.scheme()
            )));
        }
        let mut builder =
            Client::builder().user_agent(concat!("interlock-client/", env!("CARGO_PKG_VERSION")));
        if endpoint.host_str().is_some_and(is_loopback_host) {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| ClientError::transport(format!("cannot create the HTTP client: {e}")))?;
        Ok(HttpTransport {
            client,
            endpoint,
            api_key,
        })
    }

    async fn post(
        &self,
        body: String,
        framing: Framing<'_>,
        method: &str,
        name: Option<&str>,
    ) -> Result<Response, ClientError> {
        let mut rb = self
            .client
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, headers::ACCEPT)
            .body(body);
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                ClientError::Usage(
                    "INTERLOCK_API_KEY contains characters not allowed in an HTTP header".into(),
                )
            })?;
            value.set_sensitive(true);
            rb = rb.header(AUTHORIZATION, value);
        }
        if let Some(version) = framing.version_header {
            rb = rb.header(headers::PROTOCOL_VERSION, version);
        }
        if framing.mirror {
            rb = rb.header(headers::MCP_METHOD, mirror_value(method));
            if let Some(name) = name {
                rb = rb.header(headers::MCP_NAME, mirror_value(name));
            }
        }
        rb.send().await.map_err(|e| {
            ClientError::transport(format!(
                "POST {} failed: {}",
                self.endpoint,
                crate::causes::with_causes(&e)
            ))
        })
    }

    async fn exchange(
        &self,
        request: &Request,
        framing: Framing<'_>,
        progress: ProgressSink,
    ) -> Result<Answer, ClientError> {
        let response = self
            .post(
                request.to_json(),
                framing,
                &request.method,
                request.routing_name(),
            )
            .await?;
        let status = response.status().as_u16();
        let media = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(essence)
            .unwrap_or_default();
        match media.as_str() {
            "text/event-stream" if (200..300).contains(&status) => {
                read_event_stream(response, request.id, status, &progress).await
            }
            "application/json" => {
                let body = read_body(response).await?;
                let text = String::from_utf8_lossy(&body);
                match parse_incoming(&text) {
                    Ok(Incoming::Response { id, reply }) => {
                        accept_response(&id, reply, request.id, status)
                    }
                    _ if !(200..300).contains(&status) => Err(http_failure(status, &body)),
                    Ok(_) => Err(ClientError::Protocol(format!(
                        "HTTP {status}: the JSON body is not a JSON-RPC response"
                    ))),
                    Err(e) => Err(ClientError::transport(format!("HTTP {status}: {e}"))),
                }
            }
            _ => {
                let body = read_body(response).await.unwrap_or_default();
                if (200..300).contains(&status) {
                    Err(ClientError::transport(format!(
                        "HTTP {status} with unexpected content type {media:?}: {}",
                        snippet(&body)
                    )))
                } else {
                    Err(http_failure(status, &body))
                }
            }
        }
    }
}

fn http_failure(status: u16, body: &[u8]) -> ClientError {
    let text = snippet(body);
    ClientError::Http {
        status,
        message: if text.is_empty() {
            "no JSON-RPC body".to_owned()
        } else {
            text
        },
    }
}

/// A response must carry the request's id; an error with a null id (unreadable request) is
/// accepted as the answer too.
fn accept_response(
    id: &serde_json::Value,
    reply: Reply,
    want: i64,
    status: u16,
) -> Result<Answer, ClientError> {
    let null_error = id.is_null() && matches!(reply, Reply::Error(_));
    if id_matches(id, want) || null_error {
        Ok(Answer {
            reply,
            http_status: Some(status),
        })
    } else {
        Err(ClientError::Protocol(format!(
            "the response id {id} does not match the request id {want}"
        )))
    }
}

async fn read_body(response: Response) -> Result<Vec<u8>, ClientError> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ClientError::transport(format!(
                "reading the response failed: {}",
                crate::causes::with_causes(&e)
            ))
        })?;
        if body.len() + chunk.len() > MAX_BODY {
            return Err(ClientError::transport(format!(
                "the response is larger than {MAX_BODY} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

async fn read_event_stream(
    response: Response,
    want: i64,
    status: u16,
    progress: &ProgressSink,
) -> Result<Answer, ClientError> {
    let mut parser = SseParser::new();
    let mut stream = response.bytes_stream();
    let mut total = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            ClientError::transport(format!(
                "the event stream failed: {}",
                crate::causes::with_causes(&e)
            ))
        })?;
        total += chunk.len();
        if total > MAX_BODY {
            return Err(ClientError::transport(format!(
                "the event stream is larger than {MAX_BODY} bytes"
            )));
        }
        for event in parser.feed(&chunk) {
            if event.event != "message" {
                continue;
            }
            match parse_incoming(&event.data) {
                Ok(Incoming::Response { id, reply }) => {
                    return accept_response(&id, reply, want, status)
                }
                Ok(Incoming::Notification { method, params }) => {
                    forward_progress(&method, params, progress);
                }
                // No client capability is advertised, so no server request is expected on
                // a response stream; it is ignored rather than answered.
                Ok(Incoming::Request { .. }) => {}
                Err(e) => return Err(ClientError::transport(e)),
            }
        }
    }
    Err(ClientError::transport(
        "the event stream ended without a JSON-RPC response",
    ))
}

impl Transport for HttpTransport {
    fn kind(&self) -> TransportKind {
        TransportKind::Http
    }

    fn request<'a>(
        &'a mut self,
        request: &'a Request,
        framing: Framing<'a>,
        progress: ProgressSink,
    ) -> BoxFuture<'a, Result<Answer, ClientError>> {
        Box::pin(self.exchange(request, framing, progress))
    }

    fn notify<'a>(
        &'a mut self,
        notification: &'a Notification,
        framing: Framing<'a>,
    ) -> BoxFuture<'a, Result<(), ClientError>> {
        Box::pin(async move {
            let response = self
                .post(notification.to_json(), framing, &notification.method, None)
                .await?;
            let status = response.status().as_u16();
            if (200..300).contains(&status) {
                Ok(())
            } else {
                let body = read_body(response).await.unwrap_or_default();
                Err(http_failure(status, &body))
            }
        })
    }

    fn shutdown(self: Box<Self>) -> BoxFuture<'static, ()> {
        Box::pin(async move { drop(self) })
    }
}
