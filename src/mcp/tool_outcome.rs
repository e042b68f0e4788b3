//! What the governed pipeline decided for one tool call, as the MCP layer renders it
//! (both dialects in [`crate::mcp::outcome`], the legacy routes in [`crate::mcp::legacy`]).

/// The opaque text of every execution failure.
pub const FAILED_TEXT: &str = "tool execution failed";

/// What the governed pipeline decided for one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutcome {
    /// The tool ran; `text` is the JSON text of the single text content item.
    Success {
        /// JSON-encoded result (rows, sources, documents …).
        text: String,
    },
    /// A write was held for a human approver; it has NOT run.
    Queued {
        /// Id to check the approval with (`interlock_approval_status`).
        approval_id: String,
        /// The approval's state, e.g. `pending`.
        approval_state: String,
        /// Human-readable explanation.
        message: String,
    },
    /// Governance refused the call.
    Refused {
        /// 401 (no or bad key), 403 (role or policy), 429 (rate limit).
        status: u16,
        /// snake_case machine key naming the refusing step and rule.
        code: String,
        /// The decision reason, for the agent.
        message: String,
        /// Seconds until a retry may succeed (429).
        retry_after_secs: Option<u64>,
        /// Structured facts the agent can act on (a cost refusal's plan summary), as
        /// `details` of the error data or structured content.
        details: Option<serde_json::Value>,
    },
    /// No such source or asset (404).
    NotFound {
        /// What was not found.
        reason: String,
    },
    /// The source cannot serve now: circuit open, disabled, upstream TLS
    /// refused, audit unavailable (503).
    Unavailable {
        /// Which of those.
        reason: String,
    },
    /// Anything else; rendered as the opaque [`FAILED_TEXT`].
    Failed,
}
