//! Failures of the client itself, each tied to one [`ExitClass`].
//!
//! A tool result is never an error here: `isError: true`, `input_required` and invalid result
//! shapes are classified from the result (see [`crate::client::call`]). What remains are
//! failures that leave no usable result: bad usage, a broken transport, a JSON-RPC error
//! answer, a timeout or an interrupt.

use serde_json::value::RawValue;
use serde_json::Value;

use crate::client::exit::ExitClass;

/// A JSON-RPC error object as received: the raw text for lossless output, plus the fields
/// the client reads.
#[derive(Debug, Clone)]
pub struct RpcFailure {
    /// The `error` member exactly as received.
    pub raw: Box<RawValue>,
    /// `error.code`.
    pub code: i64,
    /// `error.message`.
    pub message: String,
    /// `error.data`, when present.
    pub data: Option<Value>,
    /// The HTTP status the error came with (HTTP transport only).
    pub http_status: Option<u16>,
}

impl RpcFailure {
    /// Reads a JSON-RPC error object; `None` when it is not one (no integer `code`).
    pub fn from_raw(raw: Box<RawValue>, http_status: Option<u16>) -> Option<Self> {
        let value: Value = serde_json::from_str(raw.get()).ok()?;
        let code = value.get("code")?.as_i64()?;
        let message = value
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let data = value.get("data").cloned();
        Some(RpcFailure {
            raw,
            code,
            message,
            data,
            http_status,
        })
    }

    /// `error.data.code`, InterLock's stable machine key, when present.
    pub fn machine_key(&self) -> Option<&str> {
        self.data.as_ref()?.get("code")?.as_str()
    }
}

impl std::fmt::Display for RpcFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)?;
        if let Some(key) = self.machine_key() {
            write!(f, " ({key})")?;
        }
        if let Some(reason) = self
            .data
            .as_ref()
            .and_then(|d| d.get("reason"))
            .and_then(Value::as_str)
        {
            if reason != self.message {
                write!(f, ": {reason}")?;
            }
        }
        if let Some(status) = self.http_status {
            write!(f, " [HTTP {status}]")?;
        }
        Ok(())
    }
}

/// Everything that ends a client command without a classifiable result.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The command line or the tool arguments are unusable; nothing was sent.
    #[error("{0}")]
    Usage(String),
    /// The server could not be reached or its reply could not be read.
    #[error("{0}")]
    Transport(String),
    /// The HTTP endpoint answered a non-2xx status without a JSON-RPC body.
    #[error("HTTP {status}: {message}")]
    Http {
        /// The status.
        status: u16,
        /// A snippet of the body, or a description.
        message: String,
    },
    /// The server answered with a JSON-RPC error.
    #[error("{0}")]
    Rpc(RpcFailure),
    /// The server broke the protocol in another way (cursor loop, unsupported version …).
    #[error("{0}")]
    Protocol(String),
    /// A result of the wrong shape where the client needs to read it (e.g. `tools/list`).
    #[error("{0}")]
    InvalidResult(String),
    /// `--timeout` or `--max-timeout` expired.
    #[error("{0}")]
    Timeout(String),
    /// SIGINT arrived.
    #[error("SIGINT received; the request was cancelled")]
    Interrupted,
}

impl ClientError {
    /// The exit-code class of this failure.
    pub fn class(&self) -> ExitClass {
        match self {
            ClientError::Usage(_) => ExitClass::Usage,
            ClientError::Transport(_) | ClientError::Http { .. } => ExitClass::Transport,
            ClientError::Rpc(_) | ClientError::Protocol(_) => ExitClass::Protocol,
            ClientError::InvalidResult(_) => ExitClass::InvalidResult,
            ClientError::Timeout(_) => ExitClass::Timeout,
            ClientError::Interrupted => ExitClass::Interrupted,
        }
    }

    /// Shorthand for a transport failure.
    pub fn transport(msg: impl Into<String>) -> Self {
        ClientError::Transport(msg.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn reads_interlock_error_data() {
        let f = RpcFailure::from_raw(
            raw(r#"{"code":-32602,"message":"forbidden","data":{"status":403,"code":"policy_denied","reason":"hr is off limits"}}"#),
            Some(403),
        )
        .unwrap();
        assert_eq!(f.code, -32602);
        assert_eq!(f.machine_key(), Some("policy_denied"));
        assert_eq!(
            f.to_string(),
            "JSON-RPC error -32602: forbidden (policy_denied): hr is off limits [HTTP 403]"
        );
    }

    #[test]
    fn rejects_non_error_objects() {
        assert!(RpcFailure::from_raw(raw(r#"{"message":"x"}"#), None).is_none());
        assert!(RpcFailure::from_raw(raw("[]"), None).is_none());
    }

    #[test]
    fn classes() {
        assert_eq!(ClientError::Usage("x".into()).class(), ExitClass::Usage);
        assert_eq!(ClientError::transport("x").class(), ExitClass::Transport);
        assert_eq!(
            ClientError::Protocol("x".into()).class(),
            ExitClass::Protocol
        );
        assert_eq!(ClientError::Timeout("x".into()).class(), ExitClass::Timeout);
        assert_eq!(ClientError::Interrupted.class(), ExitClass::Interrupted);
    }
}
