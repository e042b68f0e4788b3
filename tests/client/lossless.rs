//! `--output mcp-json` embeds each result byte-for-byte as the server sent it.
//!
//! The reference bytes come from an independent, hand-written HTTP/1.1 POST to the same
//! endpoint (InterLock serializes deterministically), read straight off the socket.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::value::RawValue;

use crate::common::{client, gateway, Via};

/// POSTs `body` with the modern headers for `method`; returns the response body.
fn post(method: &str, body: &str) -> String {
    let endpoint = &gateway().endpoint;
    let authority = endpoint
        .strip_prefix("http://")
        .and_then(|r| r.split('/').next())
        .expect("http endpoint");
    let mut stream = TcpStream::connect(authority).expect("connect");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.to_ascii_lowercase().contains("content-length"),
        "expected a plain JSON body: {head}"
    );
    body.to_owned()
}

/// The `result` member of a JSON-RPC response, as raw text.
fn raw_result(body: &str) -> String {
    let members: BTreeMap<String, Box<RawValue>> = serde_json::from_str(body).expect("JSON-RPC");
    members["result"].get().to_owned()
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

#[test]
fn tools_list_page_is_byte_for_byte() {
    let body = post(
        "tools/list",
        &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{{META}}}}}"#),
    );
    let expected = raw_result(&body);
    for via in [Via::Http, Via::Stdio] {
        let run = client(
            via,
            &[
                "tools",
                "list",
                "--output",
                "mcp-json",
                "--protocol-version",
                "2026-07-28",
            ],
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        let embedded = format!(r#""mcpResult":{expected}}}"#);
        assert!(
            run.stdout.contains(&embedded),
            "{via:?}: the page result is not embedded verbatim"
        );
    }
}

#[test]
fn server_discover_result_is_byte_for_byte() {
    let body = post(
        "server/discover",
        &format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#),
    );
    let expected = raw_result(&body);
    let run = client(Via::Http, &["server-info", "--output", "mcp-json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains(&format!(r#""mcpResult":{expected},"#)));
}
