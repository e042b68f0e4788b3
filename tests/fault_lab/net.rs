//! Hosts of the lab's own on one machine: a network namespace per participant, each joined
//! by a veth pair to a bridge in a namespace of its own, addresses 10.203.0.0/24 that exist
//! only inside those namespaces. Partitions are silent, as real ones are: each side drops
//! the other's packets on arrival, with no reset. Everything the lab made (processes,
//! namespaces, and with them the veths and the bridge) is removed when it is dropped, also
//! when the test fails.

use std::os::fd::AsRawFd as _;
use std::process::{Child, Command, Output, Stdio};

pub struct Lab {
    tag: String,
    names: Vec<String>,
    children: Vec<Spawned>,
}

/// A long-running process of the lab, and how to start it again.
struct Spawned {
    child: Child,
    host: String,
    program: String,
    args: Vec<String>,
    log: std::path::PathBuf,
}

fn ip(args: &[&str]) -> Output {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {} (the fault lab needs root and iproute2: network namespaces, veth, bridge)",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn tc(ns: &str, args: &[&str]) {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "tc"])
        .args(args)
        .output()
        .expect("run tc");
    assert!(
        out.status.success(),
        "tc {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Lab {
    /// A switch and one host per name, each up with its address.
    pub fn new(names: &[&str]) -> Lab {
        static LABS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = LABS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("il{}{n}", std::process::id() % 100_000);
        let lab = Lab {
            tag: tag.clone(),
            names: names.iter().map(|n| (*n).to_string()).collect(),
            children: Vec::new(),
        };
        let switch = format!("{tag}sw");
        ip(&["netns", "add", &switch]);
        ip(&["-n", &switch, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &switch, "link", "set", "br0", "up"]);
        for (i, name) in names.iter().enumerate() {
            let ns = lab.ns(name);
            let (inner, outer) = (format!("{tag}{i}a"), format!("{tag}{i}b"));
            ip(&["netns", "add", &ns]);
            ip(&[
                "link", "add", &inner, "type", "veth", "peer", "name", &outer,
            ]);
            ip(&["link", "set", &inner, "netns", &ns]);
            ip(&["link", "set", &outer, "netns", &switch]);
            ip(&["-n", &switch, "link", "set", &outer, "master", "br0", "up"]);
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", lab.addr(name)),
                "dev",
                &inner,
            ]);
            ip(&["-n", &ns, "link", "set", &inner, "up"]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
            // Every arriving packet is routed, so a cut also stops established connections
            // (early demux would reuse a socket's cached route and bypass the cut's rule).
            let sysctl = Command::new("ip")
                .args(["netns", "exec", &ns, "sysctl", "-q", "-w"])
                .args(["net.ipv4.ip_early_demux=0", "net.ipv4.tcp_early_demux=0"])
                .status()
                .expect("sysctl");
            assert!(sysctl.success(), "sysctl in {ns}");
            // The local table is looked up after the cut's rules (it comes first by default,
            // and would deliver a cut peer's packets before any rule saw them).
            ip(&["-n", &ns, "rule", "add", "pref", "100", "lookup", "local"]);
            ip(&["-n", &ns, "rule", "del", "pref", "0", "lookup", "local"]);
        }
        lab
    }

    pub fn ns(&self, name: &str) -> String {
        format!("{}{name}", self.tag)
    }

    /// The host's address (inside its namespace only).
    pub fn addr(&self, name: &str) -> String {
        let i = self
            .names
            .iter()
            .position(|n| n == name)
            .unwrap_or_else(|| panic!("no host {name}"));
        format!("10.203.0.{}", 10 + i)
    }

    /// `program args…` as a command run inside `host`'s namespace.
    pub fn command(&self, host: &str, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(host), program]);
        c
    }

    /// Runs a command inside `host` to completion; (success, stdout, stderr).
    pub fn run(&self, host: &str, program: &str, args: &[&str]) -> (bool, String, String) {
        let out = self
            .command(host, program)
            .args(args)
            .env_remove("INTERLOCK_CONFIG")
            .output()
            .expect("run");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Starts a long-running process inside `host`, stopped with the lab; its index.
    pub fn spawn(
        &mut self,
        host: &str,
        program: &str,
        args: &[&str],
        log: &std::path::Path,
    ) -> usize {
        let child = self.start(host, program, args, log);
        self.children.push(Spawned {
            child,
            host: host.to_string(),
            program: program.to_string(),
            args: args.iter().map(|a| (*a).to_string()).collect(),
            log: log.to_path_buf(),
        });
        self.children.len() - 1
    }

    fn start(&self, host: &str, program: &str, args: &[&str], log: &std::path::Path) -> Child {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("log");
        self.command(host, program)
            .args(args)
            .env_remove("INTERLOCK_CONFIG")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn")
    }

    /// Sends `signal` to process `i` (`ip netns exec` and `setpriv` exec the program, so
    /// the pid is the program's).
    pub fn signal(&self, i: usize, signal: i32) {
        let pid = i32::try_from(self.children[i].child.id()).expect("pid");
        // SAFETY: a signal to a child process of this test.
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill: {}", std::io::Error::last_os_error());
    }

    /// Waits up to `within` for process `i` to exit; whether it did.
    pub fn wait_exit(&mut self, i: usize, within: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now() + within;
        while std::time::Instant::now() < deadline {
            if matches!(self.children[i].child.try_wait(), Ok(Some(_))) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    }

    /// Starts process `i` again as it was first started (its log appended to).
    pub fn respawn(&mut self, i: usize) {
        let s = &self.children[i];
        let args: Vec<&str> = s.args.iter().map(String::as_str).collect();
        let child = self.start(&s.host, &s.program, &args, &s.log);
        self.children[i].child = child;
    }

    /// Drops every packet between `a` and `b`, both ways, without a reset and without the
    /// sender noticing: each host drops, on arrival, what the other sends (a policy rule
    /// `from <peer> blackhole`), so packets leave, go unanswered and are retransmitted as in
    /// a real partition (a route on the sending side would fail the send locally instead).
    pub fn cut(&self, a: &str, b: &str) {
        self.drop_rules("add", a, b);
    }

    pub fn heal(&self, a: &str, b: &str) {
        self.drop_rules("del", a, b);
    }

    /// Degrades `host`'s link both ways to a slow, lossy one: a token bucket of `rate`
    /// (e.g. "256kbit") whose queue holds at most 300 ms, so traffic past the rate waits and,
    /// past the queue, is dropped and retransmitted, as on a congested or failing link.
    /// (This kernel has no `netem`; `tbf` gives delay and loss by congestion instead of by
    /// a fixed figure.)
    pub fn degrade(&self, host: &str, rate: &str) {
        for (ns, dev) in self.link_ends(host) {
            ip(&["-n", &ns, "link", "set", &dev, "txqueuelen", "1000"]);
            tc(
                &ns,
                &[
                    "qdisc", "add", "dev", &dev, "root", "tbf", "rate", rate, "burst", "8kb",
                    "latency", "300ms",
                ],
            );
        }
    }

    /// Gives `host`'s link back its full speed.
    pub fn restore(&self, host: &str) {
        for (ns, dev) in self.link_ends(host) {
            tc(&ns, &["qdisc", "del", "dev", &dev, "root"]);
        }
    }

    /// The two ends of `host`'s veth: (namespace, device) inside the host and on the switch.
    fn link_ends(&self, host: &str) -> [(String, String); 2] {
        let i = self
            .names
            .iter()
            .position(|n| n == host)
            .unwrap_or_else(|| panic!("no host {host}"));
        [
            (self.ns(host), format!("{}{i}a", self.tag)),
            (format!("{}sw", self.tag), format!("{}{i}b", self.tag)),
        ]
    }

    /// Adds or deletes the two rules of a cut between `a` and `b`.
    fn drop_rules(&self, op: &str, a: &str, b: &str) {
        for (at, from) in [(a, b), (b, a)] {
            let (ns, from) = (self.ns(at), self.addr(from));
            ip(&[
                "-n",
                &ns,
                "rule",
                op,
                "pref",
                "50",
                "from",
                &from,
                "blackhole",
            ]);
        }
    }

    /// The file naming `host`'s network namespace, for [`within`].
    pub fn netns(&self, host: &str) -> String {
        format!("/var/run/netns/{}", self.ns(host))
    }

    /// Runs `f` inside `host`'s network namespace (see [`within`]).
    pub fn within<T, F>(&self, host: &str, f: impl FnOnce() -> F + Send + 'static) -> T
    where
        T: Send + 'static,
        F: std::future::Future<Output = T>,
    {
        within(self.netns(host), f)
    }
}

/// Runs `f` on a thread inside the network namespace named by `netns` (its sockets are the
/// host's) with a runtime of its own and a local task set, and returns what it returns.
pub fn within<T, F>(netns: String, f: impl FnOnce() -> F + Send + 'static) -> T
where
    T: Send + 'static,
    F: std::future::Future<Output = T>,
{
    std::thread::spawn(move || {
        let file = std::fs::File::open(&netns).expect("namespace");
        // SAFETY: setns(2) on this thread only, with a descriptor kept open for the call.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        tokio::task::LocalSet::new().block_on(&rt, f())
    })
    .join()
    .expect("lab thread")
}

impl Drop for Lab {
    fn drop(&mut self) {
        for s in &mut self.children {
            // A paused process is killed too (SIGKILL needs no SIGCONT).
            let _ = s.child.kill();
            let _ = s.child.wait();
        }
        for name in &self.names {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(name)])
                .output();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &format!("{}sw", self.tag)])
            .output();
    }
}
