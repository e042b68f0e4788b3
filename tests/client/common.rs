//! A real InterLock dev gateway for the end-to-end tests, and a runner for the client.
//!
//! One `interlock dev` (private PostgreSQL + demo data) is started per test binary, on a
//! free loopback port with a temporary data directory. A small shell watchdog owns it: when
//! the test process exits, the watchdog sends SIGTERM, waits for the gateway (which stops
//! PostgreSQL) and removes the directory. The gateway binary is `INTERLOCK_BIN` or the one
//! this package builds.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The running dev gateway.
pub struct Gateway {
    /// `http://127.0.0.1:<port>/mcp`.
    pub endpoint: String,
    /// The demo agent key.
    pub agent_key: String,
    /// The demo approver key.
    pub approver_key: String,
    /// The config file `dev` wrote (for `interlock stdio`).
    pub config: PathBuf,
    /// The gateway executable.
    pub binary: PathBuf,
}

fn binary() -> PathBuf {
    std::env::var_os("INTERLOCK_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_interlock")))
}

fn free_port() -> u16 {
    TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Shell watchdog: runs the gateway, stops it with SIGTERM when the test process is gone.
const WATCHDOG: &str = r#"
parent=$1; dir=$2; shift 2
"$@" >"$dir/dev.log" 2>&1 &
child=$!
trap 'kill -TERM $child 2>/dev/null; wait $child; rm -rf "$dir"; exit 0' TERM INT
while kill -0 "$parent" 2>/dev/null && kill -0 "$child" 2>/dev/null; do sleep 0.3; done
kill -TERM $child 2>/dev/null
wait $child
rm -rf "$dir"
"#;

/// This test process's temporary directory (the watchdog removes it at the end).
fn test_dir() -> PathBuf {
    std::env::temp_dir().join(format!("il-client-it-{}", std::process::id()))
}

// The watchdog outlives this process on purpose (it stops the gateway after we exit), so it
// is never waited for.
#[allow(clippy::zombie_processes)]
fn start() -> Gateway {
    let dir = test_dir();
    std::fs::create_dir_all(&dir).expect("temp dir");
    let port = free_port();
    let creds = dir.join("creds.json");
    let data = dir.join("dev");
    let bin = binary();
    Command::new("sh")
        .arg("-c")
        .arg(WATCHDOG)
        .arg("sh")
        .arg(std::process::id().to_string())
        .arg(&dir)
        .arg(&bin)
        .arg("dev")
        .arg("--data-dir")
        .arg(&data)
        .arg("--port")
        .arg(port.to_string())
        .arg("--credentials-file")
        .arg(&creds)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the dev gateway watchdog");
    let started = Instant::now();
    let parsed = loop {
        if let Some(v) = std::fs::read_to_string(&creds)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        {
            break v;
        }
        let log = std::fs::read_to_string(dir.join("dev.log")).unwrap_or_default();
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "dev gateway not ready after 180 s; log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let gateway = Gateway {
        endpoint: parsed["endpoint"].as_str().expect("endpoint").to_owned(),
        agent_key: parsed["agent_key"].as_str().expect("agent key").to_owned(),
        approver_key: parsed["approver_key"]
            .as_str()
            .expect("approver key")
            .to_owned(),
        config: data.join("interlock.toml"),
        binary: bin,
    };
    wait_for_source_catalog(&gateway, started);
    gateway
}

/// `interlock dev` makes its sources live before it writes the credentials; this check that
/// the agent sees `shop` with a catalog guards the tests against a regression of that.
fn wait_for_source_catalog(g: &Gateway, started: Instant) {
    loop {
        let out = Command::new(env!("CARGO_BIN_EXE_interlock"))
            .args(["client", "tools", "call", "interlock_describe_access"])
            .args(["--endpoint", &g.endpoint, "--timeout", "5"])
            .env("INTERLOCK_API_KEY", &g.agent_key)
            .stderr(Stdio::null())
            .output()
            .expect("run the client");
        let ready = serde_json::from_slice::<Value>(&out.stdout)
            .ok()
            .and_then(|v| {
                v["result"]["content"][0]["text"]
                    .as_str()
                    .map(str::to_owned)
            })
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|access| access["shop"]["resources"]["catalogued"] == Value::Bool(true));
        if ready {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "the demo source never became visible"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The shared gateway, started on first use.
pub fn gateway() -> &'static Gateway {
    static GATEWAY: OnceLock<Gateway> = OnceLock::new();
    GATEWAY.get_or_init(start)
}

/// How to reach the gateway.
#[derive(Clone, Copy, Debug)]
pub enum Via {
    /// `--endpoint` (HTTP).
    Http,
    /// The `stdio` child, launched by the client.
    Stdio,
}

/// One finished client run.
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Stdout.
    pub stdout: String,
    /// Stderr.
    pub stderr: String,
    /// Wall time.
    pub elapsed: Duration,
}

impl Run {
    /// Stdout parsed as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Runs `try client <args>` against the gateway via `via`, with the agent key.
pub fn client(via: Via, args: &[&str]) -> Run {
    client_with(via, args, Some(&gateway().agent_key), None)
}

/// Runs the client with an explicit key (or none) and optional stdin text.
pub fn client_with(via: Via, args: &[&str], key: Option<&str>, stdin: Option<&str>) -> Run {
    let g = gateway();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_interlock"));
    cmd.arg("client").args(args);
    match via {
        Via::Http => {
            cmd.args(["--endpoint", &g.endpoint]);
        }
        Via::Stdio => {
            cmd.arg("--server-binary")
                .arg(&g.binary)
                .arg("--server-config")
                .arg(&g.config);
        }
    }
    match key {
        Some(k) => cmd.env("INTERLOCK_API_KEY", k),
        None => cmd.env_remove("INTERLOCK_API_KEY"),
    };
    run(cmd, stdin)
}

/// Runs the client without any transport options added.
pub fn client_raw(args: &[&str], stdin: Option<&str>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_interlock"));
    cmd.arg("client").args(args).env_remove("INTERLOCK_API_KEY");
    run(cmd, stdin)
}

fn run(mut cmd: Command, stdin: Option<&str>) -> Run {
    use std::io::Write;
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn the client");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("stdin pipe");
        // A client that refuses its arguments exits without reading stdin:
        // the pipe then breaks, which is that client's answer, not a failure
        // of the harness. Its exit code and stderr are still asserted.
        if let Err(e) = pipe.write_all(text.as_bytes()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
        }
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("client output");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// Writes `text` to a file in the gateway's temporary directory (removed with it).
pub fn temp_file(name: &str, text: &str) -> PathBuf {
    gateway();
    let dir = test_dir().join("files");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write temp file");
    path
}

/// `path` as &str.
pub fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}
