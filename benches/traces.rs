//! What tracing adds to a governed call on its own thread (the request path; the export
//! runs on the SDK's batch thread and is measured, with the rest of the gateway's CPU, by
//! the load benchmark's traced cells): the spans of a governed read as the gateway makes them
//! (the request's server span with its attributes, fourteen step spans, the statement's
//! client span with its sanitized text and sqlcommenter comment, the audit commit's span,
//! the record's facts on the request's span), with tracing off (the baseline), every call
//! sampled, and one in a hundred (`sampling_ratio = 0.01`), exporting to an OTLP sink in
//! this process.
//!
//! Run: `cargo bench --bench traces`. See BENCHMARKS.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// Only the sink is used here (the load benchmark uses the hole too).
#[path = "support/otlp.rs"]
#[allow(dead_code)]
mod otlp;

use std::time::SystemTime;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use interlock::stages::ORDER;
use interlock::telemetry::traces::propagation::sql_comment;
use interlock::telemetry::traces::{names, KeyValue, SpanKind, TelemetrySettings, Tracing};

const SQL: &str = "SELECT id, name, country FROM public.customers WHERE id = 4242";

/// The spans of one governed read.
fn one_call(tracing: &Tracing) -> Option<String> {
    let span = tracing.server(
        "tools/call interlock_query",
        SystemTime::now(),
        None,
        || {
            vec![
                KeyValue::new("http.request.method", "POST"),
                KeyValue::new("http.route", "/mcp"),
                KeyValue::new("url.path", "/mcp"),
                KeyValue::new("url.scheme", "http"),
                KeyValue::new(names::REQUEST_ID, "9b25e8fa-8eb7-4679-bd53-dddd97c950fc"),
                KeyValue::new("client.address", "127.0.0.1"),
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("mcp.protocol.version", "2026-07-28"),
                KeyValue::new("jsonrpc.request.id", "7"),
                KeyValue::new("gen_ai.tool.name", "interlock_query"),
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
            ]
        },
    );
    let mut trace = span.call();
    let mut comment = None;
    for step in ORDER {
        trace.enter(step.name());
        if step.name() == "execution" {
            let db = trace.child("SELECT public.customers", SpanKind::Client, || {
                vec![
                    KeyValue::new("db.system.name", "postgresql"),
                    KeyValue::new("db.namespace", "shop"),
                    KeyValue::new("db.operation.name", "SELECT"),
                    KeyValue::new("db.collection.name", "public.customers"),
                    KeyValue::new(
                        "db.query.text",
                        interlock::sql::sanitized::without_values(SQL).unwrap_or_default(),
                    ),
                ]
            });
            comment = db.span_context().map(|cx| sql_comment(&cx));
        }
        if step.name() == "audit" {
            let audit = trace.child(names::AUDIT_SPAN, SpanKind::Internal, Vec::new);
            audit.set(|| vec![KeyValue::new(names::AUDIT_SEQ, 42_i64)]);
            trace.annotate(|| {
                vec![
                    KeyValue::new(names::OUTCOME, "ok"),
                    KeyValue::new(names::IDENTITY, "demo-agent"),
                    KeyValue::new(names::SOURCE, "shop"),
                    KeyValue::new(names::AUDIT_SEQ, 42_i64),
                ]
            });
        }
    }
    trace.pause();
    let id = trace.trace_id();
    drop(span);
    comment.or(id)
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let _entered = rt.enter();
    let sink = rt.block_on(otlp::otlp_sink());
    let on = |ratio: f64| {
        Tracing::start(&TelemetrySettings {
            otlp_endpoint: sink.clone(),
            sampling_ratio: ratio,
            ..TelemetrySettings::default()
        })
        .unwrap()
    };
    let mut g = c.benchmark_group("trace_per_call");
    for (name, tracing) in [
        ("off", Tracing::default()),
        ("sampled_100", on(1.0)),
        ("sampled_1", on(0.01)),
    ] {
        g.bench_function(name, |b| b.iter(|| black_box(one_call(&tracing))));
        tracing.shutdown();
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
