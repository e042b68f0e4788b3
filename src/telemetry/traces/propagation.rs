//! W3C trace context in and out: the parent a caller sent (HTTP headers, or `params._meta`
//! of an MCP request, SEP-414), and the `traceparent` a statement carries to its source as a
//! sqlcommenter comment.

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry::Context;
use opentelemetry_sdk::propagation::TraceContextPropagator;

/// The longest `tracestate` read (the W3C limit is 32 members of at most 256 characters;
/// 512 is what the specification asks a vendor to propagate at least).
const MAX_TRACESTATE: usize = 512;

/// `traceparent` / `tracestate` pairs as a caller sent them (lower-case names).
struct Pairs<'a>(&'a [(String, String)]);

impl Extractor for Pairs<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
            .filter(|v| key != "tracestate" || v.len() <= MAX_TRACESTATE)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.iter().map(|(k, _)| k.as_str()).collect()
    }
}

/// The remote parent in `pairs` (HTTP headers or `_meta` entries), when they carry a valid
/// `traceparent`. An invalid one is ignored, as the W3C specification asks: the call starts
/// a trace of its own.
pub fn remote_parent(pairs: &[(String, String)]) -> Option<Context> {
    if !pairs
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("traceparent"))
    {
        return None;
    }
    let cx = TraceContextPropagator::new().extract_with_context(&Context::new(), &Pairs(pairs));
    cx.span().span_context().is_valid().then_some(cx)
}

/// The W3C `traceparent` of a span: `00-<trace id>-<span id>-<flags>`, lower-case hex
/// only (what makes it safe inside a SQL comment: no quote, no `*`, no `/`).
pub fn traceparent(cx: &SpanContext) -> String {
    format!(
        "00-{}-{}-{:02x}",
        cx.trace_id(),
        cx.span_id(),
        cx.trace_flags().to_u8()
    )
}

/// The sqlcommenter comment carrying `cx` to PostgreSQL, with the newline before it that
/// keeps it out of any line comment: `\n/*traceparent='00-…-01'*/`.
pub fn sql_comment(cx: &SpanContext) -> String {
    format!("\n/*traceparent='{}'*/", traceparent(cx))
}

/// Parses a `traceparent` (as stored with a queued write) back into a span context, for a
/// span link.
pub fn parse_traceparent(value: &str) -> Option<SpanContext> {
    let pairs = [("traceparent".to_string(), value.to_string())];
    remote_parent(&pairs).map(|cx| cx.span().span_context().clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{SpanId, TraceFlags, TraceId, TraceState};

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_valid_traceparent_becomes_the_parent_and_an_invalid_one_is_ignored() {
        let cx = remote_parent(&pairs(&[
            ("traceparent", PARENT),
            ("tracestate", "congo=t61rcWkgMzE"),
        ]))
        .expect("parent");
        let span = cx.span().span_context().clone();
        assert!(span.is_remote());
        assert_eq!(traceparent(&span), PARENT);
        assert_eq!(span.trace_state().get("congo"), Some("t61rcWkgMzE"));
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'*/ DROP TABLE x; --",
        ] {
            assert!(
                remote_parent(&pairs(&[("traceparent", bad)])).is_none(),
                "{bad:?}"
            );
        }
        assert!(remote_parent(&pairs(&[("x-other", PARENT)])).is_none());
    }

    #[test]
    fn the_comment_holds_only_hex_and_dashes_between_its_fixed_ends() {
        let cx = SpanContext::new(
            TraceId::from_bytes([0xab; 16]),
            SpanId::from_bytes([0x01; 8]),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        );
        let comment = sql_comment(&cx);
        let inner = comment
            .strip_prefix("\n/*traceparent='")
            .and_then(|c| c.strip_suffix("'*/"))
            .expect("fixed ends");
        assert!(inner.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'));
        assert_eq!(inner.len(), 55);
        assert_eq!(
            parse_traceparent(inner),
            Some(cx.clone()).map(|c| {
                SpanContext::new(
                    c.trace_id(),
                    c.span_id(),
                    c.trace_flags(),
                    true,
                    TraceState::default(),
                )
            })
        );
    }
}
