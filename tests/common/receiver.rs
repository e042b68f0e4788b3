//! A webhook receiver on a free loopback port: records every request, answers 200 while up
//! and 503 while down.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
    /// Whether it was answered 200 (the receiver was up).
    pub accepted: bool,
}

#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    up: Arc<AtomicBool>,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let up = Arc::new(AtomicBool::new(true));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (u, r) = (up.clone(), received.clone());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let (u, r) = (u.clone(), r.clone());
                tokio::spawn(async move {
                    let Some((headers, body)) = read_request(&mut socket).await else {
                        return;
                    };
                    let accepted = u.load(Ordering::SeqCst);
                    r.lock().expect("lock").push(Received {
                        headers,
                        body,
                        accepted,
                    });
                    let status = if accepted {
                        "200 OK"
                    } else {
                        "503 Service Unavailable"
                    };
                    let _ = socket
                        .write_all(
                            format!("HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                                .as_bytes(),
                        )
                        .await;
                });
            }
        });
        Receiver { url, up, received }
    }

    pub fn set_up(&self, up: bool) {
        self.up.store(up, Ordering::SeqCst);
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
}

async fn read_request(
    socket: &mut tokio::net::TcpStream,
) -> Option<(HashMap<String, String>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let headers: HashMap<String, String> = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Some((headers, body))
}
