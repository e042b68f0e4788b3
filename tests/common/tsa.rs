//! A real RFC 3161 timestamp authority on loopback: OpenSSL's `ts -reply` behind a tiny
//! HTTP server, with its own CA and a timeStamping certificate made for the test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub struct Tsa {
    pub url: String,
    /// The CA that issued the TSA's certificate (for `openssl ts -verify -CAfile`).
    pub ca: PathBuf,
    /// The TSA's own certificate.
    pub cert: PathBuf,
    /// While set, every request is answered 503.
    pub down: Arc<AtomicBool>,
    _dir: tempfile::TempDir,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Tsa {
    pub fn start() -> Tsa {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            d,
            &[
                &["req", "-x509"][..],
                &ec[..],
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-subj",
                    "/CN=InterLock test TSA CA",
                    "-days",
                    "2",
                    "-addext",
                    "basicConstraints=critical,CA:TRUE",
                    "-addext",
                    "keyUsage=critical,keyCertSign,cRLSign",
                ][..],
            ]
            .concat(),
        );
        openssl(
            d,
            &[
                &["req"][..],
                &ec[..],
                &[
                    "-keyout",
                    "tsa.key",
                    "-out",
                    "tsa.csr",
                    "-subj",
                    "/CN=InterLock test TSA",
                ][..],
            ]
            .concat(),
        );
        std::fs::write(
            d.join("ext.cnf"),
            "extendedKeyUsage=critical,timeStamping\nkeyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n",
        )
        .unwrap();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "tsa.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "tsa.crt",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
            ],
        );
        std::fs::write(d.join("tsaserial"), "01\n").unwrap();
        std::fs::write(
            d.join("tsa.cnf"),
            format!(
                "[ tsa ]\ndefault_tsa = tsa1\n[ tsa1 ]\ndir = {}\nserial = $dir/tsaserial\n\
                 crypto_device = builtin\nsigner_cert = $dir/tsa.crt\ncerts = $dir/tsa.crt\n\
                 signer_key = $dir/tsa.key\nsigner_digest = sha256\ndefault_policy = 1.2.3.4.1\n\
                 digests = sha256, sha384, sha512\naccuracy = secs:1\nordering = yes\ntsa_name = no\n\
                 ess_cert_id_chain = no\ness_cert_id_alg = sha256\n",
                d.display()
            ),
        )
        .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let down = Arc::new(AtomicBool::new(false));
        let (flag, work) = (down.clone(), d.to_path_buf());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                if flag.load(Ordering::SeqCst) {
                    let _ = stream.write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                    continue;
                }
                std::fs::write(work.join("q.tsq"), &body).unwrap();
                let ok = Command::new("openssl")
                    .args([
                        "ts",
                        "-reply",
                        "-config",
                        "tsa.cnf",
                        "-queryfile",
                        "q.tsq",
                        "-out",
                        "r.tsr",
                    ])
                    .current_dir(&work)
                    .output()
                    .map(|o| o.status.success())
                    .unwrap_or(false);
                let reply = if ok {
                    std::fs::read(work.join("r.tsr")).unwrap()
                } else {
                    Vec::new()
                };
                let status = if ok {
                    "200 OK"
                } else {
                    "500 Internal Server Error"
                };
                let head = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/timestamp-reply\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    reply.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&reply);
            }
        });
        Tsa {
            url,
            ca: d.join("ca.pem"),
            cert: d.join("tsa.crt"),
            down,
            _dir: dir,
        }
    }
}
