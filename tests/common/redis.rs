//! A private `redis-server` on a free loopback port, stopped when dropped.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Redis {
    child: Child,
    pub port: u16,
}

impl Redis {
    /// Starts Debian's `redis-server` (`.ci/run` installs it) without persistence.
    pub fn start() -> Redis {
        let port = interlock::pgcluster::free_port().expect("port");
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (apt-get install redis-server)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server never listened");
            std::thread::sleep(Duration::from_millis(20));
        }
        Redis { child, port }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Stops the server (SIGKILL).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}
