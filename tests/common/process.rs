//! The gateway as a separate process (`interlock serve`) on a demo environment's control
//! database, for tests that kill it.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::env::DemoEnv;

pub struct Killable {
    pub child: Child,
    pub base: String,
}

impl Drop for Killable {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `interlock serve` as a separate process on the demo environment's control database.
pub fn spawn_gateway(env: &DemoEnv, dir: &std::path::Path) -> Killable {
    spawn_gateway_with(env, dir, "")
}

/// As [`spawn_gateway`], with `extra` TOML sections in its configuration.
pub fn spawn_gateway_with(env: &DemoEnv, dir: &std::path::Path, extra: &str) -> Killable {
    let port = interlock::pgcluster::free_port().expect("port");
    let config = super::control_config_file(
        dir,
        &env.control_db,
        &format!(
            "[server]
listen = \"127.0.0.1:{port}\"
[identity]
cache_ttl_ms = 300
\
             [sources]
refresh_interval_ms = 200
[approvals]
sweep_interval_secs = 1
{extra}"
        ),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_interlock"))
        .arg("--config")
        .arg(&config)
        .arg("serve")
        .env_remove("INTERLOCK_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        if ready {
            break;
        }
        assert!(Instant::now() < deadline, "the gateway never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    Killable { child, base }
}

pub fn sigkill(k: &mut Killable) {
    let _ = k.child.kill(); // SIGKILL
    let _ = k.child.wait();
}
