//! Classifying a `tools/call` result.
//!
//! The result itself is never changed (lossless output keeps the raw text); this only reads
//! it to choose the exit class:
//!
//! - not a JSON object, or `resultType` not a string → invalid result;
//! - `resultType: "input_required"` → input required (the modern multi-round-trip result;
//!   this client resolves no input requests and returns the result as is);
//! - `resultType` absent (handshake-era servers; read as `complete`, never written) or
//!   `"complete"` → a complete result, which must have a `content` array and, when present,
//!   a boolean `isError`; `isError: true` → tool error, else success;
//! - any other `resultType` → invalid (unrecognized) result.

use serde_json::value::RawValue;
use serde_json::Value;

use crate::client::exit::ExitClass;

/// What a `tools/call` result means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallOutcome {
    /// Complete, `isError` absent or false.
    Success,
    /// Complete, `isError: true`.
    ToolError,
    /// `resultType: "input_required"`.
    InputRequired,
    /// Not a valid result; the reason.
    Invalid(String),
}

impl CallOutcome {
    /// The exit class.
    pub fn class(&self) -> ExitClass {
        match self {
            CallOutcome::Success => ExitClass::Success,
            CallOutcome::ToolError => ExitClass::ToolError,
            CallOutcome::InputRequired => ExitClass::InputRequired,
            CallOutcome::Invalid(_) => ExitClass::InvalidResult,
        }
    }
}

/// A classified result: the outcome and, when it is an object, the parsed result.
#[derive(Debug)]
pub struct Classified {
    /// What it means.
    pub outcome: CallOutcome,
    /// The parsed result, when it is a JSON object.
    pub value: Option<Value>,
}

/// Classifies one raw `tools/call` result.
pub fn classify(raw: &RawValue) -> Classified {
    let value: Value = match serde_json::from_str(raw.get()) {
        Ok(v) => v,
        Err(e) => {
            return Classified {
                outcome: CallOutcome::Invalid(format!("unreadable result: {e}")),
                value: None,
            }
        }
    };
    if !value.is_object() {
        return Classified {
            outcome: CallOutcome::Invalid(format!("the result is not an object: {}", kind(&value))),
            value: None,
        };
    }
    let outcome = outcome_of(&value);
    Classified {
        outcome,
        value: Some(value),
    }
}

fn outcome_of(result: &Value) -> CallOutcome {
    match result.get("resultType") {
        None => {}
        Some(Value::String(t)) if t == "complete" => {}
        Some(Value::String(t)) if t == "input_required" => return CallOutcome::InputRequired,
        Some(Value::String(t)) => {
            return CallOutcome::Invalid(format!("unrecognized resultType {t:?}"))
        }
        Some(other) => {
            return CallOutcome::Invalid(format!("resultType is not a string: {}", kind(other)))
        }
    }
    if !result.get("content").is_some_and(Value::is_array) {
        return CallOutcome::Invalid("a complete result must have a content array".into());
    }
    match result.get("isError") {
        None | Some(Value::Bool(false)) => CallOutcome::Success,
        Some(Value::Bool(true)) => CallOutcome::ToolError,
        Some(other) => CallOutcome::Invalid(format!("isError is not a boolean: {}", kind(other))),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(text: &str) -> CallOutcome {
        classify(&RawValue::from_string(text.to_owned()).unwrap()).outcome
    }

    #[test]
    fn complete_results() {
        assert_eq!(outcome(r#"{"content":[]}"#), CallOutcome::Success);
        assert_eq!(
            outcome(
                r#"{"content":[{"type":"text","text":"x"}],"isError":false,"resultType":"complete"}"#
            ),
            CallOutcome::Success
        );
        assert_eq!(
            outcome(r#"{"content":[],"isError":true}"#),
            CallOutcome::ToolError
        );
    }

    #[test]
    fn input_required() {
        assert_eq!(
            outcome(r#"{"resultType":"input_required","inputRequests":{},"requestState":"s"}"#),
            CallOutcome::InputRequired
        );
    }

    #[test]
    fn invalid_results() {
        for bad in [
            "null",
            "[]",
            "\"x\"",
            "{}",
            r#"{"content":{}}"#,
            r#"{"content":[],"isError":"yes"}"#,
            r#"{"content":[],"resultType":"incomplete"}"#,
            r#"{"content":[],"resultType":7}"#,
        ] {
            assert!(
                matches!(outcome(bad), CallOutcome::Invalid(_)),
                "{bad} should be invalid"
            );
        }
    }

    #[test]
    fn classes() {
        assert_eq!(CallOutcome::Success.class(), ExitClass::Success);
        assert_eq!(CallOutcome::ToolError.class(), ExitClass::ToolError);
        assert_eq!(CallOutcome::InputRequired.class(), ExitClass::InputRequired);
        assert_eq!(
            CallOutcome::Invalid(String::new()).class(),
            ExitClass::InvalidResult
        );
    }

    #[test]
    fn value_is_kept_for_objects_only() {
        let c = classify(&RawValue::from_string(r#"{"content":[]}"#.into()).unwrap());
        assert!(c.value.is_some());
        let c = classify(&RawValue::from_string("[1]".into()).unwrap());
        assert!(c.value.is_none());
    }
}
