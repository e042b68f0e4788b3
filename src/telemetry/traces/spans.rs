//! The spans of a request and of the governed call inside it.
//!
//! - [`Tracing`]: the gateway's tracer, or nothing (`otlp_endpoint` empty): every span
//!   below is then a `None` that costs one branch.
//! - [`ServerSpan`]: one per HTTP request (or stdio message, or approved write run later),
//!   ended when dropped, so a streamed answer ends it when its stream ends.
//! - [`CallTrace`]: the governed call's steps, one child span each, opened as the call
//!   enters the step and ended as it enters the next; a refusal ends the tree at the step
//!   that refused, with the code and the rule.
//! - [`SpanGuard`]: a span inside a step (the source statement, the audit commit, the
//!   approval queue), ended when dropped.
//!
//! Attributes are computed only for spans that record: an unsampled call pays for ids,
//! not for attributes.

use std::sync::Arc;
use std::time::SystemTime;

use opentelemetry::trace::{
    Link, Span as _, SpanContext, SpanKind, Status, TraceContextExt, Tracer as _,
    TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use super::settings::{TelemetryError, TelemetrySettings};

/// The gateway's tracer (cheap to clone), or off.
#[derive(Clone, Default)]
pub struct Tracing(Option<Arc<Active>>);

struct Active {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    settings: Arc<TelemetrySettings>,
}

impl std::fmt::Debug for Tracing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Tracing(on)"
        } else {
            "Tracing(off)"
        })
    }
}

impl Tracing {
    /// Starts exporting as `settings` say (off when `otlp_endpoint` is empty). Must run on
    /// the gateway's Tokio runtime.
    pub fn start(settings: &TelemetrySettings) -> Result<Tracing, TelemetryError> {
        if !settings.is_on() {
            return Ok(Tracing(None));
        }
        let provider = super::export::provider(settings)?;
        let tracer = provider.tracer("interlock");
        Ok(Tracing(Some(Arc::new(Active {
            provider,
            tracer,
            settings: Arc::new(settings.clone()),
        }))))
    }

    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// The settings in force, when tracing is on.
    pub fn settings(&self) -> Option<&TelemetrySettings> {
        self.0.as_ref().map(|a| &*a.settings)
    }

    /// A server span named `name` that began at `started`, child of `parent` when the caller
    /// sent one. `attributes` is called only when the span records.
    pub fn server(
        &self,
        name: impl Into<std::borrow::Cow<'static, str>>,
        started: SystemTime,
        parent: Option<Context>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> ServerSpan {
        self.open(
            name,
            SpanKind::Server,
            started,
            parent,
            Vec::new(),
            attributes,
        )
    }

    /// The root of work that runs later on its own (an approved write), linked to the spans
    /// it follows from.
    pub fn linked_root(
        &self,
        name: impl Into<std::borrow::Cow<'static, str>>,
        links: Vec<SpanContext>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> ServerSpan {
        let links = links
            .into_iter()
            .filter(SpanContext::is_valid)
            .map(Link::with_context)
            .collect();
        self.open(
            name,
            SpanKind::Internal,
            SystemTime::now(),
            None,
            links,
            attributes,
        )
    }

    fn open(
        &self,
        name: impl Into<std::borrow::Cow<'static, str>>,
        kind: SpanKind,
        started: SystemTime,
        parent: Option<Context>,
        links: Vec<Link>,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> ServerSpan {
        let Some(active) = &self.0 else {
            return ServerSpan(None);
        };
        let parent = parent.unwrap_or_default();
        let mut span = active
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .with_start_time(started)
            .with_links(links)
            .start_with_context(&active.tracer, &parent);
        if span.is_recording() {
            span.set_attributes(attributes());
        }
        ServerSpan(Some(Root {
            tracer: active.tracer.clone(),
            settings: Arc::clone(&active.settings),
            cx: parent.with_span(span),
        }))
    }

    /// Sends what is queued and stops the export thread (waits at most the export timeout;
    /// call it off the async workers).
    pub fn shutdown(&self) {
        if let Some(a) = &self.0 {
            let _ = a
                .provider
                .shutdown_with_timeout(a.settings.export_timeout());
        }
    }
}

#[derive(Clone)]
struct Root {
    tracer: SdkTracer,
    settings: Arc<TelemetrySettings>,
    cx: Context,
}

/// A request's span; ended when dropped.
#[derive(Default)]
pub struct ServerSpan(Option<Root>);

impl ServerSpan {
    /// No span (tracing off).
    pub fn off() -> ServerSpan {
        ServerSpan(None)
    }

    /// Sets the attributes `f` returns, when the span records.
    pub fn set(&self, f: impl FnOnce() -> Vec<KeyValue>) {
        if let Some(r) = self.0.as_ref().filter(|r| r.cx.span().is_recording()) {
            r.cx.span().set_attributes(f());
        }
    }

    /// The HTTP status of the answer (`http.response.status_code`; a 5xx is an error, as
    /// the HTTP server conventions say).
    pub fn status(&self, code: u16) {
        self.set(|| vec![KeyValue::new("http.response.status_code", i64::from(code))]);
        if code >= 500 {
            if let Some(r) = &self.0 {
                r.cx.span().set_status(Status::error(code.to_string()));
            }
        }
    }

    /// Refused before its governed call began (a body that is not the route's, arguments
    /// that fail the schema): the refusal's code as `error.type` and
    /// `interlock.refusal.code`.
    pub fn refused_early(&self, code: &str) {
        self.set(|| {
            vec![
                KeyValue::new("error.type", code.to_string()),
                KeyValue::new("interlock.refusal.code", code.to_string()),
            ]
        });
    }

    /// The governed call inside this request.
    pub fn call(&self) -> CallTrace {
        CallTrace(self.0.as_ref().map(|r| {
            Box::new(Steps {
                root: r.clone(),
                step: None,
            })
        }))
    }

    /// The span's context (for a span inside it, or to store as a link).
    pub fn span_context(&self) -> Option<SpanContext> {
        self.0.as_ref().map(|r| r.cx.span().span_context().clone())
    }
}

impl Drop for ServerSpan {
    fn drop(&mut self) {
        if let Some(r) = &self.0 {
            r.cx.span().end();
        }
    }
}

/// The steps of one governed call (cheap to clone; off when the request has no span).
#[derive(Clone, Default)]
pub struct CallTrace(Option<Box<Steps>>);

#[derive(Clone)]
struct Steps {
    root: Root,
    /// The step being run, with whether its outcome was set.
    step: Option<(Context, bool)>,
}

impl std::fmt::Debug for CallTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(s) => write!(
                f,
                "CallTrace({})",
                s.root.cx.span().span_context().trace_id()
            ),
            None => f.write_str("CallTrace(off)"),
        }
    }
}

impl CallTrace {
    /// Whether the call is traced (a span exists, sampled or not).
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Whether the call's spans record (traced and sampled): attributes are worth computing.
    pub fn is_recording(&self) -> bool {
        self.0
            .as_deref()
            .is_some_and(|s| s.root.cx.span().is_recording())
    }

    /// Opens the span of `step` (ending the one before it).
    pub fn enter(&mut self, step: &'static str) {
        let Some(s) = self.0.as_deref_mut() else {
            return;
        };
        s.end_step();
        let span = s
            .root
            .tracer
            .span_builder(step)
            .with_kind(SpanKind::Internal)
            .start_with_context(&s.root.tracer, &s.root.cx);
        s.step = Some((s.root.cx.with_span(span), false));
    }

    /// Ends the current step's span (the call waits outside governance, or has ended).
    pub fn pause(&mut self) {
        if let Some(s) = self.0.as_deref_mut() {
            s.end_step();
        }
    }

    /// What the current step made of the call (`interlock.step.outcome`: `hit`, `queued`, …;
    /// a step that sets none passed it).
    pub fn outcome(&mut self, outcome: &'static str) {
        if let Some((cx, set)) = self.0.as_deref_mut().and_then(|s| s.step.as_mut()) {
            cx.span()
                .set_attribute(KeyValue::new("interlock.step.outcome", outcome));
            *set = true;
        }
    }

    /// The current step refused the call: its code and rule on the step (which ends the
    /// tree) and on the request's span.
    pub fn refused(&mut self, step: &str, code: &str, rule: &str) {
        let Some(s) = self.0.as_deref_mut() else {
            return;
        };
        let facts = |outcome: bool| {
            let mut kv = vec![
                KeyValue::new("error.type", code.to_string()),
                KeyValue::new("interlock.refusal.code", code.to_string()),
                KeyValue::new("interlock.refusal.step", step.to_string()),
                KeyValue::new("security_rule.name", rule.to_string()),
            ];
            if outcome {
                kv.push(KeyValue::new("interlock.step.outcome", "refused"));
            }
            kv
        };
        let root = s.root.cx.span();
        if root.is_recording() {
            root.set_attributes(facts(false));
        }
        if let Some((cx, set)) = s.step.as_mut() {
            let span = cx.span();
            if span.is_recording() {
                span.set_attributes(facts(true));
                span.set_status(Status::error(code.to_string()));
            }
            *set = true;
        }
    }

    /// The current step ended the call without an answer (`unavailable`, `failed`,
    /// `cancelled`): its outcome and `error.type` on the step and the request's span.
    pub fn failed(&mut self, kind: &'static str) {
        let Some(s) = self.0.as_deref_mut() else {
            return;
        };
        let root = s.root.cx.span();
        if root.is_recording() {
            root.set_attribute(KeyValue::new("error.type", kind));
        }
        if let Some((cx, set)) = s.step.as_mut() {
            let span = cx.span();
            if span.is_recording() {
                span.set_attributes([
                    KeyValue::new("interlock.step.outcome", kind),
                    KeyValue::new("error.type", kind),
                ]);
                span.set_status(Status::error(kind));
            }
            *set = true;
        }
    }

    /// Sets attributes on the request's span, when it records.
    pub fn annotate(&self, f: impl FnOnce() -> Vec<KeyValue>) {
        if let Some(s) = self.0.as_deref() {
            let root = s.root.cx.span();
            if root.is_recording() {
                root.set_attributes(f());
            }
        }
    }

    /// A span inside the current step (or the request's, between steps).
    pub fn child(
        &self,
        name: impl Into<std::borrow::Cow<'static, str>>,
        kind: SpanKind,
        attributes: impl FnOnce() -> Vec<KeyValue>,
    ) -> SpanGuard {
        let Some(s) = self.0.as_deref() else {
            return SpanGuard(None);
        };
        let parent = s.step.as_ref().map_or(&s.root.cx, |(cx, _)| cx);
        let mut span = s
            .root
            .tracer
            .span_builder(name)
            .with_kind(kind)
            .start_with_context(&s.root.tracer, parent);
        if span.is_recording() {
            span.set_attributes(attributes());
        }
        SpanGuard(Some(parent.with_span(span)))
    }

    /// The settings in force, when the call is traced.
    pub fn settings(&self) -> Option<&TelemetrySettings> {
        self.0.as_deref().map(|s| &*s.root.settings)
    }

    /// The trace id (lower-case hex), when the call is traced and sampled (an unsampled
    /// trace is exported by no one: its id would lead nowhere).
    pub fn trace_id(&self) -> Option<String> {
        self.0
            .as_deref()
            .map(|s| s.root.cx.span().span_context().clone())
            .filter(SpanContext::is_sampled)
            .map(|cx| cx.trace_id().to_string())
    }

    /// The request span's context (stored with a queued write, for the span link of its
    /// later execution).
    pub fn span_context(&self) -> Option<SpanContext> {
        self.0
            .as_deref()
            .map(|s| s.root.cx.span().span_context().clone())
    }
}

impl Steps {
    fn end_step(&mut self) {
        if let Some((cx, set)) = self.step.take() {
            let span = cx.span();
            if !set && span.is_recording() {
                span.set_attribute(KeyValue::new("interlock.step.outcome", "passed"));
            }
            span.end();
        }
    }
}

/// A span inside a step; ended when dropped.
#[derive(Default)]
pub struct SpanGuard(Option<Context>);

impl SpanGuard {
    /// The span's context (its `traceparent` goes to the source with the statement).
    pub fn span_context(&self) -> Option<SpanContext> {
        self.0.as_ref().map(|cx| cx.span().span_context().clone())
    }

    /// Sets the attributes `f` returns, when the span records.
    pub fn set(&self, f: impl FnOnce() -> Vec<KeyValue>) {
        if let Some(cx) = self.0.as_ref().filter(|cx| cx.span().is_recording()) {
            cx.span().set_attributes(f());
        }
    }

    /// Marks the span failed with `error_type` (`error.type`).
    pub fn failed(&self, error_type: &str) {
        if let Some(cx) = &self.0 {
            let span = cx.span();
            if span.is_recording() {
                span.set_attribute(KeyValue::new("error.type", error_type.to_string()));
                span.set_status(Status::error(error_type.to_string()));
            }
        }
    }
}

impl Drop for SpanGuard {
    fn drop(&mut self) {
        if let Some(cx) = &self.0 {
            cx.span().end();
        }
    }
}
