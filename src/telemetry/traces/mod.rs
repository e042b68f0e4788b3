//! OpenTelemetry traces: one trace per governed call, one span per governance step, carried
//! into PostgreSQL (RUNTIME.md, "Traces").
//!
//! - [`settings`]: `[telemetry]`, checked at startup;
//! - [`export`]: the SDK's batch processor and OTLP/HTTP exporter, bounded, with the spans
//!   dropped counted in `/metrics`;
//! - [`propagation`]: W3C `traceparent`/`tracestate` in (headers, `params._meta`) and out (the
//!   sqlcommenter comment on a source statement);
//! - [`spans`]: the request's span, the call's step spans, and spans inside a step.
//!
//! Span and attribute names are the [`names`] constants, so the code, the tests and
//! RUNTIME.md agree.

pub mod export;
pub mod names;
pub mod propagation;
pub mod settings;
pub mod spans;

pub use settings::{TelemetryError, TelemetrySettings};
pub use spans::{CallTrace, ServerSpan, SpanGuard, Tracing};

pub use opentelemetry::trace::{SpanContext, SpanKind};
pub use opentelemetry::{Context, KeyValue};
