//! Spans to the collector: the OpenTelemetry SDK's batch processor and OTLP/HTTP exporter,
//! bounded and counted.
//!
//! The SDK batches on a thread of its own, so a governed call only hands its ended spans to
//! a bounded queue and never waits for the collector. What the SDK does not say is how many
//! spans it dropped; two thin wrappers count them for `/metrics`:
//!
//! - [`Counted`] (the processor) admits a span only while fewer than `max_queue_size` are
//!   pending (queued or being exported); past that the span is dropped and counted
//!   (`reason="queue_full"`), so the SDK's own queue, as large, never overflows silently;
//! - [`Tally`] (the exporter) counts every span the collector took (`interlock_trace_spans_exported_total`)
//!   or did not take in time (`reason="export_failed"`), and releases them from pending.
//!
//! The HTTP requests go out through the gateway's own `reqwest` client on its runtime
//! ([`Carrier`]), each bounded by `export_timeout_ms`, with no retries: a collector that is
//! down costs one failed request per batch, never a governed call's time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use opentelemetry::Context;
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider, Span, SpanData,
    SpanExporter, SpanProcessor,
};
use opentelemetry_sdk::Resource;

use super::settings::{TelemetryError, TelemetrySettings};

/// Builds the tracer provider `settings` describe. Must be called on the gateway's Tokio
/// runtime: the exports run on it.
pub fn provider(settings: &TelemetrySettings) -> Result<SdkTracerProvider, TelemetryError> {
    settings.validate()?;
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let client = reqwest::Client::builder()
        .timeout(settings.export_timeout())
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let headers: HashMap<String, String> = settings
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(settings.traces_url()?)
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_timeout(settings.export_timeout())
        .with_headers(headers)
        .with_retry_policy(opentelemetry_otlp::RetryPolicy::disabled())
        .with_http_client(Carrier { client, runtime })
        .build()
        .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
    let pending = Arc::new(AtomicUsize::new(0));
    let batch = BatchConfigBuilder::default()
        .with_max_queue_size(settings.max_queue_size)
        .with_max_export_batch_size(settings.max_export_batch_size)
        .with_scheduled_delay(std::time::Duration::from_millis(settings.schedule_delay_ms))
        .build();
    let processor = Counted {
        inner: BatchSpanProcessor::builder(Tally {
            inner: exporter,
            pending: Arc::clone(&pending),
        })
        .with_batch_config(batch)
        .build(),
        pending,
        cap: settings.max_queue_size,
    };
    let resource = Resource::builder()
        .with_service_name(settings.service_name.clone())
        .with_attributes(
            settings
                .resource_attributes
                .iter()
                .map(|(k, v)| opentelemetry::KeyValue::new(k.clone(), v.clone())),
        )
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            crate::VERSION,
        ))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            settings.sampling_ratio,
        ))))
        .with_resource(resource)
        .build())
}

fn dropped(reason: &'static str, n: usize) {
    metrics::counter!("interlock_trace_spans_dropped_total", "reason" => reason)
        .increment(n as u64);
}

/// The batch processor, admitting a span only while the pending ones fit the queue.
#[derive(Debug)]
struct Counted {
    inner: BatchSpanProcessor,
    pending: Arc<AtomicUsize>,
    cap: usize,
}

impl SpanProcessor for Counted {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        let admitted = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.cap).then_some(n + 1)
            });
        match admitted {
            Ok(_) => self.inner.on_end(span),
            Err(_) => dropped("queue_full", 1),
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }
}

/// The OTLP exporter, counting what it sent and what it could not.
#[derive(Debug)]
struct Tally<E> {
    inner: E,
    pending: Arc<AtomicUsize>,
}

impl<E: SpanExporter> SpanExporter for Tally<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        let result = self.inner.export(batch).await;
        let _ = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |p| {
                Some(p.saturating_sub(n))
            });
        match &result {
            Ok(()) => metrics::counter!("interlock_trace_spans_exported_total").increment(n as u64),
            Err(e) => {
                dropped("export_failed", n);
                tracing::debug!(error = %e, spans = n, "trace export failed");
            }
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: std::time::Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// OTLP requests through the gateway's `reqwest` client, run on its runtime (the SDK's
/// batch thread only waits for the answer).
#[derive(Debug)]
struct Carrier {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

#[async_trait::async_trait]
impl HttpClient for Carrier {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let sent = self
            .client
            .post(parts.uri.to_string())
            .headers(parts.headers)
            .body(body);
        let answer = self
            .runtime
            .spawn(async move {
                let res = sent.send().await?;
                let status = res.status().as_u16();
                let body = res.bytes().await?;
                Ok::<_, reqwest::Error>((status, body))
            })
            .await??;
        let (status, body) = answer;
        Ok(Response::builder().status(status).body(body)?)
    }
}
