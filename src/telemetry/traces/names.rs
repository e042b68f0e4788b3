//! The names of the spans and attributes InterLock exports (RUNTIME.md, "Traces", lists
//! them with their meaning). Standard ones follow the OpenTelemetry semantic conventions
//! (HTTP server, MCP, JSON-RPC, database client); InterLock's own start with `interlock.`.

/// The audit record's sequence number (on the request's span and the audit span).
pub const AUDIT_SEQ: &str = "interlock.audit.seq";
/// The request id the audit record carries (`X-Request-Id`).
pub const REQUEST_ID: &str = "interlock.request_id";
/// The adapter that served the call (`mcp`, `mcp-legacy`, `proxy`, `stdio`).
pub const ADAPTER: &str = "interlock.adapter";
/// The MCP dialect a message was served in: `modern` (2026-07-28) or `handshake`.
pub const DIALECT: &str = "interlock.dialect";
/// The identity the call ran as (its name; never a credential).
pub const IDENTITY: &str = "interlock.identity";
/// The source the call named.
pub const SOURCE: &str = "interlock.source";
/// How the call ended, as its audit record says (`ok`, `refused`, `queued`, …).
pub const OUTCOME: &str = "interlock.outcome";
/// A queued write's approval.
pub const APPROVAL_ID: &str = "interlock.approval.id";

/// Span inside the `audit` step: the record appended and made durable.
pub const AUDIT_SPAN: &str = "interlock.audit.append";
/// Span inside `write_safety`: the write queued for approval.
pub const ENQUEUE_SPAN: &str = "interlock.approval.enqueue";
/// Root span of an approved write's execution, linked to the call that queued it and to
/// each approver's decision.
pub const EXECUTE_SPAN: &str = "interlock.approval.execute";
