//! A sample audit record for tests that write the log through the product's own writer.

use chrono::{DateTime, Utc};
use interlock_actors::audit::{AuditRecord, RecordOutcome};

/// Record `i` of an agent's reads on `shop`, stamped `at`: distinct request id, statement
/// and row count per `i`.
pub fn record(i: usize, at: DateTime<Utc>) -> AuditRecord {
    AuditRecord {
        at,
        request_id: format!("req-{i}"),
        identity_id: None,
        identity: Some("demo-agent".into()),
        adapter: "mcp".into(),
        dialect: Some("2026-07-28".into()),
        tool: "interlock_query".into(),
        source_id: Some("shop".into()),
        action: Some("read".into()),
        statement: Some(format!("SELECT {i}")),
        fingerprint: None,
        decision: serde_json::json!({"verdict": "allowed"}),
        outcome: RecordOutcome::Ok,
        row_count: Some(i as i64),
        duration_us: 1,
        cache_hit: false,
        approval_id: None,
        statement_sha256: None,
    }
}
