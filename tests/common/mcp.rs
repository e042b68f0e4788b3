//! Calling `POST /mcp` as a client of either dialect would.

use serde_json::{json, Value};

pub const MODERN: &str = "2026-07-28";
pub const HANDSHAKE: &str = "2025-11-25";

/// The answer to one request: HTTP status, headers and the JSON-RPC message (from a JSON
/// body or from the SSE stream's message event).
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub sse: bool,
}

/// Sends one JSON-RPC request in the given dialect (`MODERN` adds the mirrors and `_meta`).
pub async fn rpc(
    base: &str,
    key: Option<&str>,
    version: &str,
    id: u64,
    method: &str,
    params: Value,
) -> Answer {
    try_rpc(base, key, version, id, method, params)
        .await
        .expect("request")
}

/// As [`rpc`], with a transport failure (refused, reset, timed out) returned, for tests that
/// break the network on purpose.
pub async fn try_rpc(
    base: &str,
    key: Option<&str>,
    version: &str,
    id: u64,
    method: &str,
    params: Value,
) -> Result<Answer, reqwest::Error> {
    let mut params = params;
    let mut req = super::http::client()
        .post(format!("{base}/mcp"))
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", version);
    if version == MODERN {
        if let Value::Object(m) = &mut params {
            m.insert(
                "_meta".into(),
                json!({"io.modelcontextprotocol/protocolVersion": MODERN,
                       "io.modelcontextprotocol/clientCapabilities": {}}),
            );
        }
        req = req.header("Mcp-Method", method);
        if method == "tools/call" {
            if let Some(name) = params.get("name").and_then(Value::as_str) {
                req = req.header("Mcp-Name", name.to_string());
            }
        }
    }
    if let Some(k) = key {
        req = req.header("Authorization", format!("Bearer {k}"));
    }
    let res = req
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .send()
        .await?;
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let sse = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let text = res.text().await?;
    let body = if sse {
        last_message(&text)
    } else {
        serde_json::from_str(&text).unwrap_or(Value::Null)
    };
    Ok(Answer {
        status,
        headers,
        body,
        sse,
    })
}

/// The last `data:` payload of an SSE stream that is a JSON-RPC response.
pub fn last_message(stream: &str) -> Value {
    stream
        .split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .collect();
            (!data.is_empty()).then(|| data.join("\n"))
        })
        .filter_map(|d| serde_json::from_str::<Value>(&d).ok())
        .filter(|v| v.get("id").is_some())
        .last()
        .unwrap_or(Value::Null)
}

/// `tools/call` of `name` with `arguments`.
pub async fn call(
    base: &str,
    key: Option<&str>,
    version: &str,
    name: &str,
    arguments: Value,
) -> Answer {
    rpc(
        base,
        key,
        version,
        1,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
    .await
}

/// The rows of a successful `interlock_query` answer.
pub fn rows(a: &Answer) -> Vec<Value> {
    let text = a.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {:?}", a.body));
    serde_json::from_str::<Vec<Value>>(text).unwrap_or_else(|_| panic!("not a row array: {text}"))
}

/// Starts `interlock_query` with `arguments` over a raw connection and returns the socket
/// once the answer has begun (the 200 and its headers): dropping it is exactly "the client
/// goes away".
pub async fn start_query(
    addr: std::net::SocketAddr,
    key: &str,
    arguments: Value,
) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "interlock_query", "arguments": arguments}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {HANDSHAKE}\r\n\
         Authorization: Bearer {key}\r\nContent-Length: {}\r\n\r\n{body}",
        addr.port(),
        body.len()
    );
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    socket.write_all(request.as_bytes()).await.expect("write");
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&head).contains("\r\n\r\n") {
        let n = socket.read(&mut buf).await.expect("read");
        assert!(n > 0, "connection closed before the answer started");
        head.extend_from_slice(&buf[..n]);
    }
    assert!(
        String::from_utf8_lossy(&head).starts_with("HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    socket
}

/// Whether a statement containing `fragment` is running on database `db`.
pub async fn statement_running(db: &str, fragment: &str) -> bool {
    let n: i64 = super::admin(db)
        .await
        .query_one(
            "SELECT count(*) FROM pg_stat_activity
              WHERE strpos(query, $1) > 0 AND state = 'active'
                AND pid <> pg_backend_pid() AND datname = current_database()",
            &[&fragment],
        )
        .await
        .expect("pg_stat_activity")
        .get(0);
    n > 0
}
