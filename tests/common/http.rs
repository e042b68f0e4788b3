//! Raw HTTP helpers over loopback.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Sends raw request bytes on a new connection and returns the raw response (until EOF or
/// `timeout`).
pub fn raw(addr: SocketAddr, request: &str, timeout: Duration) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(timeout)).expect("timeout");
    s.write_all(request.as_bytes()).expect("write");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// A reqwest client without proxies.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The body of `GET url` with the bearer `key` (fails the test on a transport error).
pub async fn get_text(url: &str, key: &str) -> String {
    client()
        .get(url)
        .bearer_auth(key)
        .send()
        .await
        .expect("GET")
        .text()
        .await
        .expect("body")
}

/// As [`get_text`], the body read as JSON.
pub async fn get_json(url: &str, key: &str) -> serde_json::Value {
    serde_json::from_str(&get_text(url, key).await).expect("json")
}

/// Reads a streaming response (server-sent events) until its text contains `needle`;
/// returns everything read. Fails the test after `within`.
pub async fn read_until(
    response: &mut reqwest::Response,
    needle: &str,
    within: Duration,
) -> String {
    let mut seen = String::new();
    let deadline = std::time::Instant::now() + within;
    while !seen.contains(needle) {
        assert!(
            std::time::Instant::now() < deadline,
            "{needle:?} never arrived: {seen}"
        );
        if let Ok(Ok(Some(chunk))) =
            tokio::time::timeout(Duration::from_millis(500), response.chunk()).await
        {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
    seen
}
