//! The lab's participants on their hosts: the control PostgreSQL (`ctl`), the source
//! PostgreSQL (`src`, the demo shop plus the lab's write target), Redis (`redis`), three
//! gateway replicas (`r1`–`r3`) and the client. Provisioned as an operator would: the CLI
//! migrates, registers the source and applies an access file; keys come from the CLI.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::net::Lab;

pub const HOSTS: &[&str] = &["ctl", "src", "redis", "r1", "r2", "r3", "client"];
pub const REPLICAS: &[&str] = &["r1", "r2", "r3"];
pub const PORT: u16 = 8080;
/// The lab's dead-peer timeout (`control.dead_peer_timeout_secs`).
pub const DEAD_PEER_SECS: u64 = 6;
/// `identity.cache_ttl_ms`: a missed revocation notice is bounded by it.
pub const IDENTITY_TTL: Duration = Duration::from_millis(300);
/// The limited identity's rate and burst (per second), shared fleet-wide in Redis.
pub const LIMITED_RATE: f64 = 4.0;
pub const LIMITED_BURST: f64 = 4.0;
/// Approvals each write needs.
pub const APPROVALS_REQUIRED: i32 = 2;

/// The write target: every approved write adds one to `v` and appends its marker to `log`,
/// so the row itself records which writes ran, in order, and how often. (A trigger writing
/// an effects table would not do: the gateway counts the rows a trigger changes against the
/// approved bound, as it should.)
const LAB_SQL: &str = "
CREATE TABLE public.lab_cell (id int PRIMARY KEY, v bigint NOT NULL, log text NOT NULL);
INSERT INTO public.lab_cell VALUES (1, 0, '');
";

/// The lab's access file: the agents (one limited to `LIMITED_RATE`), two approvers, an
/// operator.
fn access() -> String {
    format!(
        r#"
[[identities]]
name = "lab-agent"
kind = "agent"
rate = "100000/s"
burst = 100000

[[identities]]
name = "lab-victim"
kind = "agent"
rate = "100000/s"
burst = 100000

[[identities]]
name = "lab-limited"
kind = "agent"
rate = "{LIMITED_RATE}/s"
burst = {LIMITED_BURST}

[[identities]]
name = "lab-approver-a"
kind = "approver"

[[identities]]
name = "lab-approver-b"
kind = "approver"

[[identities]]
name = "lab-operator"
kind = "operator"

[[roles]]
source = "shop"
name = "analyst"
allow = ["read public.orders", "read public.products", "read public.lab_cell", "write public.lab_cell"]

[[grants]]
identity = "lab-agent"
source = "shop"
roles = ["analyst"]

[[grants]]
identity = "lab-victim"
source = "shop"
roles = ["analyst"]

[[grants]]
identity = "lab-limited"
source = "shop"
roles = ["analyst"]

[[approvers]]
identity = "lab-approver-a"
sources = ["shop"]

[[approvers]]
identity = "lab-approver-b"
sources = ["shop"]
"#
    )
}

/// The keys the workload uses.
#[derive(Clone)]
pub struct Keys {
    pub agent: String,
    pub victim: String,
    pub victim_prefix: String,
    pub limited: String,
    pub approver_a: String,
    pub approver_b: String,
    pub operator: String,
}

/// Indices of the lab's long-running processes.
pub struct Procs {
    pub ctl: usize,
    pub replicas: Vec<(&'static str, usize)>,
}

impl Procs {
    pub fn replica(&self, name: &str) -> usize {
        self.replicas
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, i)| *i)
            .unwrap_or_else(|| panic!("no replica {name}"))
    }
}

const AS_POSTGRES: [&str; 3] = ["--reuid=postgres", "--regid=postgres", "--init-groups"];

/// A PostgreSQL cluster on `host`, listening on its lab address; the process index.
fn start_database(lab: &mut Lab, dir: &Path, host: &str) -> usize {
    use std::os::unix::fs::PermissionsExt;
    let home = dir.join(host);
    std::fs::create_dir(&home).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = home.join("pg");
    std::fs::create_dir(&data).unwrap();
    let chown = std::process::Command::new("chown")
        .args(["-R", "postgres:postgres", home.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(chown.success());
    let initdb = std::process::Command::new("setpriv")
        .args(AS_POSTGRES)
        .args([
            "initdb",
            "-D",
            data.to_str().unwrap(),
            "-A",
            "trust",
            "-U",
            "postgres",
        ])
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(initdb.success(), "initdb on {host}");
    // initdb's trust covers loopback only: the lab's hosts connect over the bridge.
    let hba = data.join("pg_hba.conf");
    let mut rules = std::fs::read_to_string(&hba).unwrap();
    rules.push_str("host all all 10.203.0.0/24 trust\n");
    std::fs::write(&hba, rules).unwrap();
    let listen = format!("listen_addresses={}", lab.addr(host));
    let sockets = format!("unix_socket_directories={}", home.display());
    let mut args: Vec<&str> = AS_POSTGRES.to_vec();
    let data = data.to_str().unwrap().to_string();
    args.extend([
        "postgres",
        "-D",
        &data,
        "-c",
        &listen,
        "-c",
        "port=5432",
        "-c",
        &sockets,
        "-c",
        "fsync=off",
        "-c",
        "max_connections=300",
    ]);
    lab.spawn(host, "setpriv", &args, &dir.join(format!("{host}.log")))
}

/// Waits until the PostgreSQL on `host` answers from the client host.
pub fn wait_database(lab: &Lab, host: &str) {
    let addr = lab.addr(host);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lab
        .run(
            "client",
            "psql",
            &["-h", &addr, "-U", "postgres", "-c", "SELECT 1"],
        )
        .0
    {
        assert!(Instant::now() < deadline, "{host} never answered");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn psql(lab: &Lab, host: &str, db: &str, args: &[&str]) {
    let addr = lab.addr(host);
    let mut all = vec![
        "-h",
        &addr,
        "-U",
        "postgres",
        "-d",
        db,
        "-v",
        "ON_ERROR_STOP=1",
        "-q",
    ];
    all.extend(args);
    let (ok, _, err) = lab.run("client", "psql", &all);
    assert!(ok, "psql on {host}/{db} {args:?}: {err}");
}

pub fn config(lab: &Lab, dir: &Path, host: &str) -> PathBuf {
    let path = dir.join(format!("{host}.toml"));
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"{addr}:{PORT}\"\n\
             [control]\nhost = \"{ctl}\"\nport = 5432\ndbname = \"control\"\nuser = \"postgres\"\n\
             connect_timeout_secs = 2\ndead_peer_timeout_secs = {DEAD_PEER_SECS}\n\
             [identity]\ncache_ttl_ms = {ttl}\n[sources]\nrefresh_interval_ms = 300\n\
             [rate_limit]\nbackend = \"redis\"\nredis_url = \"redis://{redis}:6379\"\n\
             redis_timeout_ms = 200\nredis_unavailable = \"divide\"\n\
             [approvals]\nsweep_interval_secs = 1\n\
             [breaker]\nmin_calls = 6\nopen_secs = 4\nhalf_open_probes = 2\n",
            addr = lab.addr(host),
            ctl = lab.addr("ctl"),
            redis = lab.addr("redis"),
            ttl = IDENTITY_TTL.as_millis(),
        ),
    )
    .unwrap();
    path
}

/// Creates a key for `identity` (of `kind`) with the CLI; (key, prefix).
fn key(lab: &Lab, cfg: &str, identity: &str, kind: &str) -> (String, String) {
    let bin = env!("CARGO_BIN_EXE_interlock");
    let (ok, out, err) = lab.run(
        "client",
        bin,
        &["--config", cfg, "keys", "create", identity, "--kind", kind],
    );
    assert!(ok, "key for {identity}: {err}");
    let key = out.trim().to_string();
    let prefix = err
        .split_whitespace()
        .find(|w| w.starts_with("ilk_"))
        .unwrap_or_else(|| panic!("no prefix in {err}"))
        .to_string();
    (key, prefix)
}

/// Every host up, the control database migrated, the source registered, the keys made.
pub fn provision(lab: &mut Lab, dir: &Path) -> (Keys, Procs) {
    let ctl = start_database(lab, dir, "ctl");
    start_database(lab, dir, "src");
    let redis = lab.addr("redis");
    lab.spawn(
        "redis",
        "redis-server",
        &[
            "--bind",
            &redis,
            "--port",
            "6379",
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
        ],
        &dir.join("redis.log"),
    );
    wait_database(lab, "ctl");
    wait_database(lab, "src");
    psql(lab, "ctl", "postgres", &["-c", "CREATE DATABASE control"]);
    psql(lab, "src", "postgres", &["-c", "CREATE DATABASE shop"]);
    let shop_sql = concat!(env!("CARGO_MANIFEST_DIR"), "/config/demo/shop.sql");
    psql(lab, "src", "shop", &["-f", shop_sql]);
    psql(lab, "src", "shop", &["-c", LAB_SQL]);

    let cfg = config(lab, dir, "client");
    let cfg = cfg.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_interlock");
    let access_file = dir.join("access.toml");
    std::fs::write(&access_file, access()).unwrap();
    let src = lab.addr("src");
    let required = APPROVALS_REQUIRED.to_string();
    for args in [
        vec!["--config", cfg, "migrate"],
        vec![
            "--config",
            cfg,
            "sources",
            "add",
            "shop",
            "--host",
            &src,
            "--dbname",
            "shop",
            "--user",
            "postgres",
            "--cache-ttl-ms",
            "30000",
            "--approvals-required",
            &required,
        ],
        vec![
            "--config",
            cfg,
            "policy",
            "apply",
            access_file.to_str().unwrap(),
        ],
    ] {
        let (ok, out, err) = lab.run("client", bin, &args);
        assert!(ok, "{args:?}: {out} {err}");
    }
    let (victim, victim_prefix) = key(lab, cfg, "lab-victim", "agent");
    let keys = Keys {
        agent: key(lab, cfg, "lab-agent", "agent").0,
        victim,
        victim_prefix,
        limited: key(lab, cfg, "lab-limited", "agent").0,
        approver_a: key(lab, cfg, "lab-approver-a", "approver").0,
        approver_b: key(lab, cfg, "lab-approver-b", "approver").0,
        operator: key(lab, cfg, "lab-operator", "operator").0,
    };
    let mut replicas = Vec::new();
    for host in REPLICAS {
        let cfg = config(lab, dir, host);
        let log = dir.join(format!("{host}.log"));
        let i = lab.spawn(
            host,
            bin,
            &["--config", cfg.to_str().unwrap(), "serve"],
            &log,
        );
        replicas.push((*host, i));
    }
    (keys, Procs { ctl, replicas })
}

pub fn base(lab: &Lab, host: &str) -> String {
    format!("http://{}:{PORT}", lab.addr(host))
}

/// The lab's logs, for a failure's report.
pub fn logs(dir: &Path) -> String {
    let mut out = String::new();
    for host in HOSTS {
        if let Ok(text) = std::fs::read_to_string(dir.join(format!("{host}.log"))) {
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            out.push_str(&format!("--- {host}.log (last lines)\n"));
            for l in tail.into_iter().rev() {
                out.push_str(l);
                out.push('\n');
            }
        }
    }
    out
}
