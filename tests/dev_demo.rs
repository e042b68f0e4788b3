//! `interlock dev`, run as a user would: credentials file, readiness, CLI against its control
//! database, clean shutdown on SIGTERM, reuse on the next run, recovery after SIGKILL.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_interlock");

struct Dev {
    child: Child,
    creds: PathBuf,
    log: PathBuf,
}

fn start_dev(data_dir: &Path, port: u16) -> Dev {
    start_dev_with(data_dir, port, &[])
}

fn start_dev_with(data_dir: &Path, port: u16, extra: &[&str]) -> Dev {
    let creds = data_dir.join("creds.json");
    let _ = std::fs::remove_file(&creds);
    let log = data_dir.join("dev.log");
    let child = Command::new(BIN)
        .args(["dev", "--port", &port.to_string(), "--data-dir"])
        .arg(data_dir.join("dev"))
        .args(extra)
        .arg("--credentials-file")
        .arg(&creds)
        .env_remove("INTERLOCK_CONFIG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("spawn interlock dev");
    Dev { child, creds, log }
}

fn wait_for_credentials(dev: &mut Dev) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = dev.child.try_wait() {
            panic!("interlock dev exited early: {status}");
        }
        if let Ok(text) = std::fs::read_to_string(&dev.creds) {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                return v;
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!("no credentials file within 120 s");
}

fn signal(child: &Child, sig: i32) {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(pid, sig);
    }
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "process did not exit within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn postgres_running(data_dir: &Path) -> bool {
    let pid_file = data_dir.join("dev/pgdata/postmaster.pid");
    let Ok(text) = std::fs::read_to_string(pid_file) else {
        return false;
    };
    let Some(pid) = text
        .lines()
        .next()
        .and_then(|l| l.trim().parse::<i32>().ok())
    else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

async fn get_json(url: &str) -> (u16, Value) {
    let res = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .get(url)
        .send()
        .await
        .expect("request");
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn dev_demo_runs_stops_cleanly_and_recovers_from_a_crash() {
    let dir = tempfile::Builder::new()
        .prefix("interlock-dev-")
        .tempdir()
        .expect("tmp");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    let port = interlock::pgcluster::free_port().expect("port");

    // First run: fresh cluster, demo data, keys.
    let mut dev = start_dev(dir.path(), port);
    let creds = wait_for_credentials(&mut dev);
    assert_eq!(creds["endpoint"], format!("http://127.0.0.1:{port}/mcp"));
    for key in ["agent_key", "approver_key", "operator_key"] {
        assert!(
            creds[key].as_str().is_some_and(|k| k.starts_with("ilk_")),
            "{key}: {creds}"
        );
    }
    let dsn = creds["sources"]["shop"]["dsn"]
        .as_str()
        .expect("dsn")
        .to_string();
    assert!(
        dsn.starts_with("postgres://") && dsn.ends_with("/shop"),
        "{dsn}"
    );
    let (status, body) = get_json(&format!("http://127.0.0.1:{port}/readyz")).await;
    assert_eq!(status, 200, "{body}");

    // The demo data is there, exactly as later issues rely on.
    let (client, conn) = tokio_postgres::connect(&dsn, tokio_postgres::NoTls)
        .await
        .expect("dsn works");
    tokio::spawn(conn);
    for (table, at_least) in [
        ("public.customers", 1000),
        ("public.orders", 10000),
        ("public.products", 200),
        ("hr.salaries", 100),
    ] {
        let n: i64 = client
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .await
            .expect("count")
            .get(0);
        assert!(n >= at_least, "{table} has {n} rows");
    }
    // A runaway statement stops at 1 GB of temporary files instead of filling the disk.
    let limit: String = client
        .query_one("SHOW temp_file_limit", &[])
        .await
        .expect("show")
        .get(0);
    assert_eq!(limit, "1GB");
    drop(client);

    // The CLI works against the running demo's control database.
    let config = dir.path().join("dev/interlock.toml");
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .args(["sources", "list"])
        .output()
        .expect("sources list");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("shop"));
    let out = Command::new(BIN)
        .arg("--config")
        .arg(&config)
        .args(["keys", "create", "extra-agent"])
        .output()
        .expect("keys create");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The demo's identity provider: `dev token` signs in as demo-agent, and another agent
    // (provisioned on first use, its group granting the analyst role); the shop's row-level
    // security on interlock.identity shows each its own notes.
    let token = |identity: &str| {
        let out = Command::new(BIN)
            .args(["dev", "--data-dir"])
            .arg(dir.path().join("dev"))
            .args(["token", "--identity", identity])
            .output()
            .expect("dev token");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let endpoint = format!("http://127.0.0.1:{port}");
    let notes = |credential: String| {
        let endpoint = endpoint.clone();
        async move {
            let a = common::mcp::call(
                &endpoint,
                Some(&credential),
                common::mcp::MODERN,
                "interlock_query",
                serde_json::json!({"source_id": "shop", "sql": "SELECT agent FROM public.agent_notes"}),
            )
            .await;
            common::mcp::rows(&a)
                .iter()
                .map(|r| r["agent"].as_str().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        notes(token("demo-agent")).await,
        ["demo-agent", "demo-agent"]
    );
    assert_eq!(
        notes(creds["agent_key"].as_str().unwrap().to_string()).await,
        ["demo-agent", "demo-agent"]
    );
    assert_eq!(notes(token("night-agent")).await, ["night-agent"]);
    let (status, metadata) = get_json(&format!(
        "http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
    ))
    .await;
    assert_eq!(status, 200, "{metadata}");
    assert_eq!(metadata["resource"], format!("http://127.0.0.1:{port}/mcp"));
    assert_eq!(
        metadata["authorization_servers"],
        creds["oauth"]["issuer"]
            .as_str()
            .map(|i| serde_json::json!([i]))
            .unwrap()
    );

    // SIGTERM stops the gateway and PostgreSQL.
    signal(&dev.child, libc::SIGTERM);
    let status = wait_exit(&mut dev.child, Duration::from_secs(60));
    assert!(status.success(), "clean exit expected, got {status}");
    assert!(
        !postgres_running(dir.path()),
        "no postgres may be left behind"
    );
    // A healthy run logs no warning and no error until it is stopped: a background task that
    // fails on every round (as the partition maintenance once did, unnoticed) shows here.
    // (Its background tasks still run while PostgreSQL stops, and say so: not checked.)
    let log = std::fs::read_to_string(&dev.log).expect("log");
    let loud: Vec<&str> = log
        .lines()
        .take_while(|l| !l.contains("gateway stopped; stopping PostgreSQL"))
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    assert!(
        loud.is_empty(),
        "a healthy demo run logged:\n{}",
        loud.join("\n")
    );

    // Second run reuses the cluster, mints fresh keys, and runs a fleet of two replicas.
    let mut dev = start_dev_with(dir.path(), port, &["--replicas", "2"]);
    let creds2 = wait_for_credentials(&mut dev);
    assert_ne!(creds2["agent_key"], creds["agent_key"]);
    let second = port + 1;
    assert_eq!(
        creds2["replicas"],
        serde_json::json!([
            format!("http://127.0.0.1:{port}/mcp"),
            format!("http://127.0.0.1:{second}/mcp")
        ])
    );
    for p in [port, second] {
        let (status, _) = get_json(&format!("http://127.0.0.1:{p}/readyz")).await;
        assert_eq!(status, 200, "replica on {p}");
    }
    let operator = creds2["operator_key"].as_str().expect("operator key");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let listed: Value = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client")
            .get(format!("http://127.0.0.1:{second}/admin/replicas"))
            .bearer_auth(operator)
            .send()
            .await
            .expect("replicas")
            .json()
            .await
            .unwrap_or(Value::Null);
        if listed["replicas"].as_array().map(Vec::len) == Some(2) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "both replicas register: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // A crash (SIGKILL) leaves PostgreSQL running; the next run adopts it.
    signal(&dev.child, libc::SIGKILL);
    wait_exit(&mut dev.child, Duration::from_secs(10));
    let mut dev = start_dev(dir.path(), port);
    wait_for_credentials(&mut dev);
    let (status, _) = get_json(&format!("http://127.0.0.1:{port}/readyz")).await;
    assert_eq!(status, 200);
    signal(&dev.child, libc::SIGTERM);
    let status = wait_exit(&mut dev.child, Duration::from_secs(60));
    assert!(status.success(), "{status}");
    assert!(
        !postgres_running(dir.path()),
        "no postgres may be left behind"
    );
}

#[test]
fn dev_reports_a_busy_gateway_port_clearly() {
    let dir = tempfile::Builder::new()
        .prefix("interlock-dev-")
        .tempdir()
        .expect("tmp");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = busy.local_addr().expect("addr").port();
    let out = Command::new(BIN)
        .args(["dev", "--port", &port.to_string(), "--data-dir"])
        .arg(dir.path().join("dev"))
        .env_remove("INTERLOCK_CONFIG")
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(
        !postgres_running(dir.path()),
        "a failed start must not leave postgres running"
    );
}

/// `interlock dev --data-dir D` as root, with D under a directory the server user cannot
/// pass through (root's private `mktemp -d`): refused before anything starts, naming the
/// user PostgreSQL runs as, the directory in the way and the two ways out.
#[test]
fn a_data_dir_the_server_user_cannot_reach_is_refused_before_anything_starts() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "this case is about running as root"
    );
    let private = tempfile::tempdir().unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let data = private.path().join("data");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_interlock"))
        .args(["dev", "--data-dir", data.to_str().unwrap()])
        .env_remove("INTERLOCK_CONFIG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    let blocked = private.path().display().to_string();
    for words in [
        "runs as the operating-system user `postgres`",
        &data.display().to_string(),
        &blocked,
        &format!("chmod o+x {blocked}"),
        "Nothing was started",
    ] {
        assert!(err.contains(words), "{words:?} not in: {err}");
    }
    assert!(!data.exists(), "nothing was created");
}
