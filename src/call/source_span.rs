//! The database client span of a statement sent to a source, and the sqlcommenter comment
//! that carries its trace context there (RUNTIME.md, "Traces").
//!
//! The comment is made here, from the span's ids alone (lower-case hex and dashes between
//! fixed ends), and appended by the connector to the text it sends, after the statement was
//! decided: the decision, the cache key and the audit record all see the statement without
//! it, and nothing an agent sends can reach it.
//!
//! The span carries `db.query.text` only without values ([`crate::sql::sanitized`]), and
//! not at all when the statement touches a relation the operator marked sensitive
//! (`telemetry.sensitive_relations`): then neither the text nor a relation name is exported.

use crate::governance::verdict::Allowed;
use crate::sources::postgres::execute::ExecError;
use crate::sources::registry::SourceRuntime;
use crate::telemetry::traces::propagation::sql_comment;
use crate::telemetry::traces::{CallTrace, KeyValue, SpanGuard, SpanKind};

/// A statement on its way to a source: its span, and the comment to append to its text
/// (`None` when the call is not traced or `telemetry.sql_comment` is off).
pub struct SourceSpan {
    pub span: SpanGuard,
    pub comment: Option<String>,
}

/// Opens the client span of `allowed`'s statement on `rt`, sent as `operation` (`SELECT`,
/// `EXPLAIN`, the write's verb; asked only when the call is traced).
pub fn open(
    trace: &CallTrace,
    rt: &SourceRuntime,
    allowed: &Allowed,
    operation: impl FnOnce() -> String,
) -> SourceSpan {
    let Some(settings) = trace.settings() else {
        return SourceSpan {
            span: SpanGuard::default(),
            comment: None,
        };
    };
    let comment_of = |span: &SpanGuard| {
        settings
            .sql_comment
            .then(|| span.span_context())
            .flatten()
            .map(|cx| sql_comment(&cx))
    };
    if !trace.is_recording() {
        // Not sampled: the span exists for its context (the comment says "not sampled" to
        // the source), and nothing is computed for attributes no one records.
        let span = trace.child("SQL", SpanKind::Client, Vec::new);
        let comment = comment_of(&span);
        return SourceSpan { span, comment };
    }
    let operation = operation();
    let operation = operation.as_str();
    let source = &rt.source;
    let sensitive = allowed
        .tables_read
        .iter()
        .chain(&allowed.tables_written)
        .any(|t| settings.is_sensitive(&source.id, &t.schema, &t.name));
    let namespace = source.dbname.clone().unwrap_or_default();
    let single = match (
        allowed.tables_read.as_slice(),
        allowed.tables_written.as_slice(),
    ) {
        ([t], []) | ([], [t]) => Some(t.to_string()),
        ([r], [w]) if r == w => Some(w.to_string()),
        _ => None,
    };
    let target = match (&single, sensitive) {
        (Some(t), false) => t.clone(),
        _ => namespace.clone(),
    };
    let name = format!("{operation} {target}");
    let span = trace.child(name, SpanKind::Client, || {
        let mut kv = vec![
            KeyValue::new("db.system.name", "postgresql"),
            KeyValue::new("db.namespace", namespace.clone()),
            KeyValue::new("db.operation.name", operation.to_string()),
            KeyValue::new(crate::telemetry::traces::names::SOURCE, source.id.clone()),
        ];
        if let Some(host) = &source.host {
            kv.push(KeyValue::new("server.address", host.clone()));
        }
        if let Some(port) = source.port {
            kv.push(KeyValue::new("server.port", i64::from(port)));
        }
        if sensitive {
            kv.push(KeyValue::new(
                "interlock.db.query.withheld",
                "sensitive_relation",
            ));
        } else {
            if let Some(t) = &single {
                kv.push(KeyValue::new("db.collection.name", t.clone()));
            }
            if let Some(text) = crate::sql::sanitized::without_values(&allowed.statement) {
                kv.push(KeyValue::new("db.query.text", text));
            }
        }
        kv
    });
    let comment = comment_of(&span);
    SourceSpan { span, comment }
}

/// What a statement's failure is called on its span: the SQLSTATE when PostgreSQL refused
/// it (`db.response.status_code` too), else the connector's reason.
pub fn failed(span: &SpanGuard, e: &ExecError) {
    let kind = match e {
        ExecError::Refused { code, .. } => {
            span.set(|| vec![KeyValue::new("db.response.status_code", code.clone())]);
            code.as_str()
        }
        ExecError::Upstream(_) => "upstream",
        ExecError::TlsRefused => "tls_refused",
        ExecError::PoolExhausted => "pool_exhausted",
        ExecError::StatementTimeout => "statement_timeout",
        ExecError::Cancelled => "cancelled",
        ExecError::Parameter { .. } => "invalid_parameter",
        ExecError::MemoryBudget => "memory_budget",
        ExecError::Unsupported(_) => "unsupported_type",
        ExecError::BoundExceeded { .. } => "bound_exceeded",
        ExecError::RowSecurity => "row_security",
        ExecError::DifferentRows => "different_rows",
        ExecError::Unusable(_) => "unusable",
        _ => "driver",
    };
    span.failed(kind);
}

/// The first keyword of a decided statement, as `db.operation.name` (`SELECT`, `WITH`,
/// `INSERT`, …).
pub fn operation(statement: &str) -> String {
    statement
        .split(|c: char| !c.is_ascii_alphabetic())
        .find(|w| !w.is_empty())
        .unwrap_or("SQL")
        .to_ascii_uppercase()
}

#[cfg(test)]
mod tests {
    use super::operation;

    #[test]
    fn the_operation_is_the_first_keyword() {
        for (sql, want) in [
            ("SELECT 1", "SELECT"),
            ("  with x as (select 1) select * from x", "WITH"),
            ("(SELECT 1) UNION (SELECT 2)", "SELECT"),
            ("EXPLAIN SELECT 1", "EXPLAIN"),
            ("update t set a = 1", "UPDATE"),
            ("", "SQL"),
        ] {
            assert_eq!(operation(sql), want, "{sql}");
        }
    }
}
