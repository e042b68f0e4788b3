//! `[telemetry]`: where traces go, how many are kept, and what they may never carry.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::governance::pattern::ResourcePattern;

/// `[telemetry]`: OpenTelemetry traces exported over OTLP (HTTP/protobuf).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySettings {
    /// The collector's OTLP/HTTP endpoint (`http://127.0.0.1:4318`, or the whole traces URL
    /// ending in `/v1/traces`). Empty: tracing is off and costs nothing.
    pub otlp_endpoint: String,
    /// `service.name` of every span's resource.
    pub service_name: String,
    /// Further resource attributes (`deployment.environment.name = "prod"`, …).
    pub resource_attributes: BTreeMap<String, String>,
    /// The share of traces sampled where the call starts one (0.0–1.0). A call whose caller
    /// sent a trace context follows the caller's sampling decision (parent-based).
    pub sampling_ratio: f64,
    /// Headers sent to the collector with every export (an API key, a tenant).
    pub headers: BTreeMap<String, String>,
    /// Spans held for export at most; past it new spans are dropped (counted in
    /// `interlock_trace_spans_dropped_total{reason="queue_full"}`).
    pub max_queue_size: usize,
    /// Spans sent in one export request at most.
    pub max_export_batch_size: usize,
    /// How long spans wait for a batch before they are sent.
    pub schedule_delay_ms: u64,
    /// How long one export may take before it is given up (its spans dropped and counted).
    pub export_timeout_ms: u64,
    /// Whether statements sent to a source carry the trace context as a SQL comment
    /// (`/*traceparent='…'*/`, the sqlcommenter convention), so `pg_stat_activity` and the
    /// server log tie a running statement to its trace.
    pub sql_comment: bool,
    /// Relations whose statements are never exported as text, per source id
    /// (`shop = ["public.customers", "hr.*"]`; `"*"` for every relation of a source).
    pub sensitive_relations: BTreeMap<String, Vec<ResourcePattern>>,
}

impl Default for TelemetrySettings {
    fn default() -> Self {
        TelemetrySettings {
            otlp_endpoint: String::new(),
            service_name: "interlock".into(),
            resource_attributes: BTreeMap::new(),
            sampling_ratio: 1.0,
            headers: BTreeMap::new(),
            max_queue_size: 4096,
            max_export_batch_size: 512,
            schedule_delay_ms: 1000,
            export_timeout_ms: 5000,
            sql_comment: true,
            sensitive_relations: BTreeMap::new(),
        }
    }
}

/// Settings that cannot work, named.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("telemetry.otlp_endpoint {0:?} is not an http:// or https:// URL")]
    Endpoint(String),
    #[error("telemetry.sampling_ratio must be between 0.0 and 1.0, not {0}")]
    Ratio(f64),
    #[error("telemetry.{0} must be at least 1")]
    Zero(&'static str),
    #[error("telemetry.max_export_batch_size ({batch}) must not exceed telemetry.max_queue_size ({queue})")]
    Batch { batch: usize, queue: usize },
    #[error("telemetry.headers: {0}")]
    Header(String),
    #[error("the OTLP exporter cannot be built: {0}")]
    Exporter(String),
}

impl TelemetrySettings {
    /// Whether traces are exported at all.
    pub fn is_on(&self) -> bool {
        !self.otlp_endpoint.trim().is_empty()
    }

    /// The traces URL: the endpoint as given when it names a path, else `/v1/traces` on it
    /// (as the OTLP exporter specification resolves a base endpoint).
    pub fn traces_url(&self) -> Result<String, TelemetryError> {
        let endpoint = self.otlp_endpoint.trim();
        let rest = endpoint
            .strip_prefix("http://")
            .or_else(|| endpoint.strip_prefix("https://"))
            .filter(|rest| !rest.is_empty() && !rest.starts_with('/'))
            .ok_or_else(|| TelemetryError::Endpoint(endpoint.to_string()))?;
        Ok(match rest.find('/') {
            Some(i) if rest[i..].len() > 1 => endpoint.to_string(),
            _ => format!("{}/v1/traces", endpoint.trim_end_matches('/')),
        })
    }

    /// Checks every value (at startup, so a bad setting is named before anything runs).
    pub fn validate(&self) -> Result<(), TelemetryError> {
        if !self.is_on() {
            return Ok(());
        }
        self.traces_url()?;
        if !(0.0..=1.0).contains(&self.sampling_ratio) || self.sampling_ratio.is_nan() {
            return Err(TelemetryError::Ratio(self.sampling_ratio));
        }
        for (name, value) in [
            ("max_queue_size", self.max_queue_size as u64),
            ("max_export_batch_size", self.max_export_batch_size as u64),
            ("schedule_delay_ms", self.schedule_delay_ms),
            ("export_timeout_ms", self.export_timeout_ms),
        ] {
            if value == 0 {
                return Err(TelemetryError::Zero(name));
            }
        }
        if self.max_export_batch_size > self.max_queue_size {
            return Err(TelemetryError::Batch {
                batch: self.max_export_batch_size,
                queue: self.max_queue_size,
            });
        }
        for (name, value) in &self.headers {
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
            {
                return Err(TelemetryError::Header(format!(
                    "{name:?} is not a header name"
                )));
            }
            if value.bytes().any(|b| b < 0x20 || b == 0x7f) {
                return Err(TelemetryError::Header(format!(
                    "the value of {name} holds a control character"
                )));
            }
        }
        Ok(())
    }

    pub fn export_timeout(&self) -> Duration {
        Duration::from_millis(self.export_timeout_ms)
    }

    /// Whether statements on `source` that touch `schema.table` may be exported as text.
    pub fn is_sensitive(&self, source: &str, schema: &str, table: &str) -> bool {
        self.sensitive_relations
            .get(source)
            .is_some_and(|patterns| patterns.iter().any(|p| p.touches_table(schema, table)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_url_is_resolved_as_the_exporter_specification_says() {
        let cases = [
            (
                "http://127.0.0.1:4318",
                Some("http://127.0.0.1:4318/v1/traces"),
            ),
            (
                "http://127.0.0.1:4318/",
                Some("http://127.0.0.1:4318/v1/traces"),
            ),
            (
                "https://otel.example:443/custom/traces",
                Some("https://otel.example:443/custom/traces"),
            ),
            ("127.0.0.1:4318", None),
            ("grpc://127.0.0.1:4317", None),
            ("http://", None),
            ("http:///v1/traces", None),
        ];
        for (endpoint, want) in cases {
            let s = TelemetrySettings {
                otlp_endpoint: endpoint.into(),
                ..TelemetrySettings::default()
            };
            assert_eq!(s.traces_url().ok().as_deref(), want, "{endpoint}");
        }
    }

    #[test]
    fn bad_values_are_named() {
        let on = TelemetrySettings {
            otlp_endpoint: "http://127.0.0.1:4318".into(),
            ..TelemetrySettings::default()
        };
        assert!(on.validate().is_ok());
        assert!(TelemetrySettings::default().validate().is_ok(), "off");
        let cases: [(TelemetrySettings, &str); 5] = [
            (
                TelemetrySettings {
                    sampling_ratio: 1.5,
                    ..on.clone()
                },
                "sampling_ratio",
            ),
            (
                TelemetrySettings {
                    max_queue_size: 0,
                    ..on.clone()
                },
                "max_queue_size",
            ),
            (
                TelemetrySettings {
                    max_export_batch_size: 10_000,
                    ..on.clone()
                },
                "max_export_batch_size",
            ),
            (
                TelemetrySettings {
                    headers: [("bad name".to_string(), "x".to_string())].into(),
                    ..on.clone()
                },
                "header name",
            ),
            (
                TelemetrySettings {
                    headers: [("x-key".to_string(), "a\nb".to_string())].into(),
                    ..on.clone()
                },
                "control character",
            ),
        ];
        for (settings, named) in cases {
            let e = settings.validate().expect_err(named).to_string();
            assert!(e.contains(named), "{e}");
        }
    }

    #[test]
    fn sensitive_relations_are_matched_per_source() {
        let s: TelemetrySettings = toml::from_str(
            r#"
otlp_endpoint = ""
service_name = "interlock"
resource_attributes = {}
sampling_ratio = 1.0
headers = {}
max_queue_size = 1
max_export_batch_size = 1
schedule_delay_ms = 1
export_timeout_ms = 1
sql_comment = true
sensitive_relations = { shop = ["public.customers"], hr = ["*"] }
"#,
        )
        .expect("parses");
        assert!(s.is_sensitive("shop", "public", "customers"));
        assert!(!s.is_sensitive("shop", "public", "orders"));
        assert!(s.is_sensitive("hr", "payroll", "salaries"));
        assert!(!s.is_sensitive("other", "public", "customers"));
    }
}
