//! JSON-RPC 2.0 messages: what the client sends and how it reads what arrives.
//!
//! Incoming messages are split into their members as raw JSON text
//! (`BTreeMap<String, Box<RawValue>>`), so a response's `result` and `error` are kept
//! byte-for-byte as the server sent them. Only the members the client must read (`id`,
//! `method`, `params`) are parsed into values. The client never sends batches: every
//! outgoing message is one JSON object.

use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

/// One outgoing JSON-RPC request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request id (client-assigned, never caller-selected).
    pub id: i64,
    /// The method.
    pub method: String,
    /// The params object.
    pub params: Map<String, Value>,
}

impl Request {
    /// The request as one JSON text.
    pub fn to_json(&self) -> String {
        json!({"jsonrpc": "2.0", "id": self.id, "method": self.method, "params": self.params})
            .to_string()
    }

    /// `params.name`, the tool name of a `tools/call`.
    pub fn tool_name(&self) -> Option<&str> {
        self.params.get("name").and_then(Value::as_str)
    }

    /// What `Mcp-Name` mirrors (2026-07-28): a `tools/call`'s tool, a task method's task id.
    pub fn routing_name(&self) -> Option<&str> {
        match self.method.as_str() {
            "tools/call" => self.tool_name(),
            "tasks/get" | "tasks/cancel" | "tasks/update" => {
                self.params.get("taskId").and_then(Value::as_str)
            }
            _ => None,
        }
    }
}

/// One outgoing JSON-RPC notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method.
    pub method: String,
    /// The params object.
    pub params: Map<String, Value>,
}

impl Notification {
    /// The notification as one JSON text.
    pub fn to_json(&self) -> String {
        let mut v = json!({"jsonrpc": "2.0", "method": self.method});
        if !self.params.is_empty() {
            v["params"] = Value::Object(self.params.clone());
        }
        v.to_string()
    }
}

/// A response: the result or the error member, each exactly as received.
#[derive(Debug)]
pub enum Reply {
    /// `result`, raw.
    Result(Box<RawValue>),
    /// `error`, raw.
    Error(Box<RawValue>),
}

/// A message that arrived from the server.
#[derive(Debug)]
pub enum Incoming {
    /// A response to one of the client's requests.
    Response {
        /// Its `id` (`Null` when absent or null).
        id: Value,
        /// Its result or error.
        reply: Reply,
    },
    /// A notification (`notifications/progress`, log messages …).
    Notification {
        /// The method.
        method: String,
        /// The params (`Null` when absent).
        params: Value,
    },
    /// A server-to-client request.
    Request {
        /// Its id, to answer with.
        id: Value,
        /// The method.
        method: String,
    },
}

/// Parses one message text. `Err` describes why it is not a JSON-RPC message.
pub fn parse_incoming(text: &str) -> Result<Incoming, String> {
    let members: BTreeMap<String, Box<RawValue>> = serde_json::from_str(text)
        .map_err(|e| format!("the server sent a message that is not a JSON object: {e}"))?;
    let value_of = |key: &str| -> Option<Value> {
        members
            .get(key)
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    };
    let id = value_of("id").unwrap_or(Value::Null);
    if let Some(method) = value_of("method") {
        let method = method
            .as_str()
            .ok_or_else(|| "the server sent a message whose method is not a string".to_owned())?
            .to_owned();
        return Ok(if members.contains_key("id") && !id.is_null() {
            Incoming::Request { id, method }
        } else {
            Incoming::Notification {
                method,
                params: value_of("params").unwrap_or(Value::Null),
            }
        });
    }
    let mut members = members;
    if let Some(result) = members.remove("result") {
        return Ok(Incoming::Response {
            id,
            reply: Reply::Result(result),
        });
    }
    if let Some(error) = members.remove("error") {
        return Ok(Incoming::Response {
            id,
            reply: Reply::Error(error),
        });
    }
    Err(
        "the server sent a JSON object that is neither a request, a notification nor a response"
            .to_owned(),
    )
}

/// Whether a response id answers the request with `id`.
pub fn id_matches(received: &Value, id: i64) -> bool {
    received.as_i64() == Some(id)
}

/// The answer to a server-to-client request the client does not implement. Advertising no
/// client capability, the client only expects `ping`, which it answers with `{}`.
pub fn answer_server_request(id: &Value, method: &str) -> String {
    if method == "ping" {
        json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string()
    } else {
        json!({"jsonrpc": "2.0", "id": id,
               "error": {"code": -32601, "message": format!("method not found: {method}")}})
        .to_string()
    }
}

/// `notifications/cancelled` for request `id`.
pub fn cancelled(id: i64, reason: &str) -> Notification {
    let mut params = Map::new();
    params.insert("requestId".into(), Value::from(id));
    params.insert("reason".into(), Value::from(reason));
    Notification {
        method: "notifications/cancelled".into(),
        params,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_is_kept_byte_for_byte() {
        let text = r#"{"jsonrpc":"2.0","id":3,"result":{ "b" : 1,"a":[1.50, "\u00e9"] , "z":{}}}"#;
        match parse_incoming(text).unwrap() {
            Incoming::Response {
                id,
                reply: Reply::Result(raw),
            } => {
                assert_eq!(id, json!(3));
                assert_eq!(raw.get(), r#"{ "b" : 1,"a":[1.50, "\u00e9"] , "z":{}}"#);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn null_result_is_a_result() {
        match parse_incoming(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap() {
            Incoming::Response {
                reply: Reply::Result(raw),
                ..
            } => assert_eq!(raw.get(), "null"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn error_notification_and_request() {
        assert!(matches!(
            parse_incoming(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#),
            Ok(Incoming::Response {
                id: Value::Null,
                reply: Reply::Error(_)
            })
        ));
        assert!(matches!(
            parse_incoming(
                r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":0}}"#
            ),
            Ok(Incoming::Notification { .. })
        ));
        assert!(matches!(
            parse_incoming(r#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#),
            Ok(Incoming::Request { .. })
        ));
        assert!(parse_incoming("[1]").is_err());
        assert!(parse_incoming(r#"{"jsonrpc":"2.0","id":1}"#).is_err());
    }

    #[test]
    fn outgoing_shapes() {
        let mut params = Map::new();
        params.insert("name".into(), json!("t"));
        let req = Request {
            id: 7,
            method: "tools/call".into(),
            params,
        };
        let v: Value = serde_json::from_str(&req.to_json()).unwrap();
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t"}})
        );
        assert_eq!(req.tool_name(), Some("t"));
        let n: Value = serde_json::from_str(&cancelled(7, "timeout").to_json()).unwrap();
        assert_eq!(
            n,
            json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                   "params":{"requestId":7,"reason":"timeout"}})
        );
        let init = Notification {
            method: "notifications/initialized".into(),
            params: Map::new(),
        };
        assert_eq!(
            init.to_json(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        );
    }

    #[test]
    fn server_requests_are_answered() {
        let ping: Value = serde_json::from_str(&answer_server_request(&json!(1), "ping")).unwrap();
        assert_eq!(ping["result"], json!({}));
        let other: Value =
            serde_json::from_str(&answer_server_request(&json!("x"), "roots/list")).unwrap();
        assert_eq!(other["error"]["code"], json!(-32601));
        assert_eq!(other["id"], json!("x"));
    }
}
