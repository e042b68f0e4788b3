//! The JSON-RPC envelope of one POST body.
//!
//! A body is exactly one request (`id` present) or one notification (`id`
//! absent) — never a batch, never a response. Whether a message is a
//! notification is decided by the presence of the `id` member alone, so a
//! request with a malformed id is answered with an error rather than silently
//! acknowledged as a notification.

use serde_json::{Map, Value};

use crate::mcp::error::RpcError;

/// One parsed JSON-RPC message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The request id (string or number); `None` for a notification.
    pub id: Option<Value>,
    /// The method name.
    pub method: String,
    /// `params`; an absent member reads as an empty object.
    pub params: Map<String, Value>,
}

impl Message {
    /// The id to echo in a response: the request's, or `null` for a notification.
    pub fn reply_id(&self) -> Value {
        self.id.clone().unwrap_or(Value::Null)
    }

    /// Whether this message is a notification (no `id` member).
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }

    /// `params._meta`, when it is an object.
    pub fn meta(&self) -> Option<&Map<String, Value>> {
        self.params.get("_meta").and_then(Value::as_object)
    }
}

/// A rejected body: the id to echo (`null` when it could not be read) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// The id to echo.
    pub id: Value,
    /// The error to answer with (boxed: a rejection is the cold path).
    pub error: Box<RpcError>,
}

fn rejected(id: Value, error: RpcError) -> Rejected {
    Rejected {
        id,
        error: Box::new(error),
    }
}

/// Parse `body` as one JSON-RPC request or notification.
pub fn parse(body: &[u8]) -> Result<Message, Rejected> {
    let value: Value =
        serde_json::from_slice(body).map_err(|_| rejected(Value::Null, RpcError::parse_error()))?;
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => return Err(rejected(Value::Null, RpcError::batch())),
        _ => {
            let error = RpcError::invalid_request("the body must be a JSON object");
            return Err(rejected(Value::Null, error));
        }
    };
    let id = match object.remove("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id),
        Some(_) => {
            let error = RpcError::invalid_request("id must be a string or a number");
            return Err(rejected(Value::Null, error));
        }
    };
    let echo = id.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let error = RpcError::invalid_request("jsonrpc must be \"2.0\"");
        return Err(rejected(echo, error));
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        _ if object.contains_key("result") || object.contains_key("error") => {
            let error = RpcError::invalid_request("JSON-RPC responses are not accepted");
            return Err(rejected(echo, error));
        }
        _ => {
            let error = RpcError::invalid_request("method must be a string");
            return Err(rejected(echo, error));
        }
    };
    let params = match object.remove("params") {
        None => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => {
            let error = RpcError::invalid_request("params must be an object");
            return Err(rejected(echo, error));
        }
    };
    Ok(Message { id, method, params })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::error::code;
    use serde_json::json;

    #[test]
    fn well_formed_requests_and_notifications() {
        let request = parse(br#"{"jsonrpc":"2.0","id":"a","method":"ping"}"#);
        assert_eq!(
            request,
            Ok(Message {
                id: Some(json!("a")),
                method: "ping".into(),
                params: Map::new()
            })
        );
        let note = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(note.is_ok_and(|message| message.is_notification()));
    }

    #[test]
    fn malformed_bodies_table() {
        let cases: [(&[u8], i64, Value); 9] = [
            (b"{not json", code::PARSE_ERROR, Value::Null),
            (b"", code::PARSE_ERROR, Value::Null),
            (
                br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                code::INVALID_REQUEST,
                Value::Null,
            ),
            (b"42", code::INVALID_REQUEST, Value::Null),
            (
                br#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                code::INVALID_REQUEST,
                Value::Null,
            ),
            (
                br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
                code::INVALID_REQUEST,
                json!(3),
            ),
            (
                br#"{"jsonrpc":"2.0","id":4}"#,
                code::INVALID_REQUEST,
                json!(4),
            ),
            (
                br#"{"jsonrpc":"2.0","id":5,"result":{}}"#,
                code::INVALID_REQUEST,
                json!(5),
            ),
            (
                br#"{"jsonrpc":"2.0","id":6,"method":"ping","params":[1]}"#,
                code::INVALID_REQUEST,
                json!(6),
            ),
        ];
        for (body, expected_code, expected_id) in cases {
            let rejected = parse(body).err();
            let got = rejected.map(|r| (r.error.code, r.id, r.error.status));
            assert_eq!(
                got,
                Some((expected_code, expected_id, 400)),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
