//! The fault lab, first schedule: the fleet on hosts of its own (network namespaces: the
//! database host, two gateway replicas, a client), one replica cut from the control database
//! by a silent partition and healed, with a workload running through both replicas the
//! whole time, every request and answer recorded with its request id. The checker then
//! reads the history and the control database:
//!
//! - no call the cut replica answered during the cut was answered with rows (it cannot
//!   audit), and the other replica kept answering;
//! - the cut replica's `/readyz` answers promptly (never hangs) and says 503 with the
//!   control database named once it can no longer reach it; its fleet channel shows down;
//! - after the heal the cut replica serves again within a bound that does not grow with the
//!   length of the cut (dead-peer detection on control connections);
//! - every answered call has exactly one audit record.
//!
//! Needs root and iproute2 (`.ci/run` runs as root); everything is removed afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[path = "fault_lab/net.rs"]
mod net;

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use net::Lab;

const HOSTS: &[&str] = &["db", "r1", "r2", "client"];
const PORT: u16 = 8080;
/// The lab's dead-peer timeout (`control.dead_peer_timeout_secs`).
const DEAD_PEER_SECS: u64 = 6;
/// How long the partition lasts.
const CUT: Duration = Duration::from_secs(20);
/// How soon after the heal the cut replica must serve again: the dead-peer timeout, a
/// reconnect and a margin, whatever the cut's length.
const RECOVERY: Duration = Duration::from_secs(DEAD_PEER_SECS + 8);

/// One recorded request: who served it, when, what came back.
#[derive(Debug, Clone)]
struct Event {
    replica: &'static str,
    at: Duration,
    took: Duration,
    request_id: Option<String>,
    status: u16,
    answered_rows: bool,
    reason: String,
}

fn start_database(lab: &mut Lab, dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.join("pg");
    std::fs::create_dir(&data).unwrap();
    let chown = std::process::Command::new("chown")
        .args([
            "postgres:postgres",
            data.to_str().unwrap(),
            dir.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(chown.success());
    let as_postgres = ["--reuid=postgres", "--regid=postgres", "--init-groups"];
    let initdb = std::process::Command::new("setpriv")
        .args(as_postgres)
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
    assert!(initdb.success(), "initdb");
    // initdb's trust covers loopback only: the lab's hosts connect over the bridge.
    let hba = data.join("pg_hba.conf");
    let mut rules = std::fs::read_to_string(&hba).unwrap();
    rules.push_str("host all all 10.203.0.0/24 trust\n");
    std::fs::write(&hba, rules).unwrap();
    let listen = format!("listen_addresses={}", lab.addr("db"));
    let sockets = format!("unix_socket_directories={}", dir.display());
    let mut args: Vec<&str> = as_postgres.to_vec();
    args.extend([
        "postgres",
        "-D",
        data.to_str().unwrap(),
        "-c",
        &listen,
        "-c",
        "port=5432",
        "-c",
        &sockets,
        "-c",
        "fsync=off",
        "-c",
        "max_connections=200",
    ]);
    lab.spawn("db", "setpriv", &args, &dir.join("postgres.log"));
}

fn config(lab: &Lab, dir: &std::path::Path, host: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{host}.toml"));
    std::fs::write(
        &path,
        format!(
            "[server]\nlisten = \"{addr}:{PORT}\"\n\
             [control]\nhost = \"{db}\"\nport = 5432\ndbname = \"control\"\nuser = \"postgres\"\n\
             connect_timeout_secs = 2\ndead_peer_timeout_secs = {DEAD_PEER_SECS}\n\
             [identity]\ncache_ttl_ms = 300\n[sources]\nrefresh_interval_ms = 300\n",
            addr = lab.addr(host),
            db = lab.addr("db"),
        ),
    )
    .unwrap();
    path
}

const ACCESS: &str = r#"
[[identities]]
name = "lab-agent"
kind = "agent"
rate = "100000/s"
burst = 100000

[[roles]]
source = "shop"
name = "analyst"
allow = ["read public.customers", "read public.orders", "read public.products"]

[[grants]]
identity = "lab-agent"
source = "shop"
roles = ["analyst"]
"#;

/// The database host up, the control database migrated, the shop source registered with
/// its demo data, an agent's key; returns the key.
fn provision(lab: &mut Lab, dir: &std::path::Path) -> String {
    start_database(lab, dir);
    let db = lab.addr("db");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lab
        .run(
            "client",
            "psql",
            &["-h", &db, "-U", "postgres", "-c", "SELECT 1"],
        )
        .0
    {
        assert!(
            Instant::now() < deadline,
            "the database host never answered"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    for sql in ["CREATE DATABASE control", "CREATE DATABASE shop"] {
        let (ok, _, err) = lab.run("client", "psql", &["-h", &db, "-U", "postgres", "-c", sql]);
        assert!(ok, "{sql}: {err}");
    }
    let shop_sql = concat!(env!("CARGO_MANIFEST_DIR"), "/config/demo/shop.sql");
    let (ok, _, err) = lab.run(
        "client",
        "psql",
        &[
            "-h",
            &db,
            "-U",
            "postgres",
            "-d",
            "shop",
            "-v",
            "ON_ERROR_STOP=1",
            "-q",
            "-f",
            shop_sql,
        ],
    );
    assert!(ok, "shop data: {err}");
    let cfg = config(lab, dir, "client");
    let cfg = cfg.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_interlock");
    let access = dir.join("access.toml");
    std::fs::write(&access, ACCESS).unwrap();
    for args in [
        vec!["--config", cfg, "migrate"],
        vec![
            "--config", cfg, "sources", "add", "shop", "--host", &db, "--dbname", "shop", "--user",
            "postgres",
        ],
        vec!["--config", cfg, "policy", "apply", access.to_str().unwrap()],
    ] {
        let (ok, out, err) = lab.run("client", bin, &args);
        assert!(ok, "{args:?}: {out} {err}");
    }
    let (ok, out, err) = lab.run(
        "client",
        bin,
        &["--config", cfg, "keys", "create", "lab-agent"],
    );
    assert!(ok, "key: {err}");
    out.split_whitespace()
        .find(|w| w.starts_with("il_") || w.len() > 30)
        .unwrap_or_else(|| panic!("no key in {out}"))
        .to_string()
}

fn base(lab: &Lab, host: &str) -> String {
    format!("http://{}:{PORT}", lab.addr(host))
}

/// One governed read through `replica`, recorded.
async fn read(base: &str, key: &str, replica: &'static str, start: Instant, n: u32) -> Event {
    let sql = format!(
        "SELECT id, status FROM public.orders WHERE id = {}",
        1 + n % 50
    );
    let call = common::mcp::call(
        base,
        Some(key),
        common::mcp::MODERN,
        "interlock_query",
        json!({"source_id": "shop", "sql": sql}),
    );
    let at = start.elapsed();
    let t = Instant::now();
    match tokio::time::timeout(Duration::from_secs(30), call).await {
        Ok(a) => Event {
            replica,
            at,
            took: t.elapsed(),
            request_id: a
                .headers
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            status: a.status,
            answered_rows: a.body["result"]["isError"] == json!(false),
            reason: a.body["error"]["data"]["reason"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        },
        Err(_) => Event {
            replica,
            at,
            took: t.elapsed(),
            request_id: None,
            status: 0,
            answered_rows: false,
            reason: "no answer in 30 s".into(),
        },
    }
}

/// `GET /readyz`: (status, body, how long it took).
async fn readyz(base: &str) -> (u16, Value, Duration) {
    let t = Instant::now();
    let res = reqwest::Client::new()
        .get(format!("{base}/readyz"))
        .timeout(Duration::from_secs(10))
        .send()
        .await;
    match res {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.json().await.unwrap_or(Value::Null), t.elapsed())
        }
        Err(_) => (0, Value::Null, t.elapsed()),
    }
}

#[test]
fn a_replica_cut_from_the_control_database_answers_nothing_it_cannot_audit_and_recovers_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let mut lab = Lab::new(HOSTS);
    let key = provision(&mut lab, dir.path());
    let bin = env!("CARGO_BIN_EXE_interlock");
    for host in ["r1", "r2"] {
        let cfg = config(&lab, dir.path(), host);
        let log = dir.path().join(format!("{host}.log"));
        lab.spawn(
            host,
            bin,
            &["--config", cfg.to_str().unwrap(), "serve"],
            &log,
        );
    }
    let (b1, b2) = (base(&lab, "r1"), base(&lab, "r2"));
    let (events, probes, phases) = {
        let lab_ref: &Lab = &lab;
        // The workload and the probes run inside the client host; the faults from here.
        let (tx, rx) = std::sync::mpsc::channel::<&'static str>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|scope| {
            let handle = scope.spawn(|| {
                lab_ref.within("client", move || async move {
                    use std::sync::{Arc, Mutex};
                    let start = Instant::now();
                    // Both replicas up.
                    for b in [&b1, &b2] {
                        let deadline = Instant::now() + Duration::from_secs(60);
                        while readyz(b).await.0 != 200 {
                            assert!(Instant::now() < deadline, "{b} never became ready");
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                    }
                    let phase = Arc::new(Mutex::new("before"));
                    let events = Arc::new(Mutex::new(Vec::new()));
                    let probes = Arc::new(Mutex::new(Vec::new()));
                    // Each replica's reads, and r1's probes, at their own pace: a call that
                    // hangs on one replica holds back nothing else.
                    let mut tasks = Vec::new();
                    for (replica, b) in [("r1", b1.clone()), ("r2", b2.clone())] {
                        let (phase, events, key) = (phase.clone(), events.clone(), key.clone());
                        tasks.push(tokio::spawn(async move {
                            let mut n = 0;
                            loop {
                                let now = *phase.lock().unwrap();
                                if now == "end" {
                                    return;
                                }
                                n += 1;
                                let e = read(&b, &key, replica, start, n).await;
                                events.lock().unwrap().push((now, e));
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            }
                        }));
                    }
                    {
                        let (phase, probes, b) = (phase.clone(), probes.clone(), b1.clone());
                        tasks.push(tokio::spawn(async move {
                            loop {
                                let now = *phase.lock().unwrap();
                                if now == "end" {
                                    return;
                                }
                                let at = start.elapsed();
                                let probe = readyz(&b).await;
                                probes.lock().unwrap().push((now, at, probe));
                                tokio::time::sleep(Duration::from_millis(250)).await;
                            }
                        }));
                    }
                    let mut phases = Vec::new();
                    let mut started = false;
                    loop {
                        if !started && events.lock().unwrap().len() >= 10 {
                            started = true;
                            let _ = done_tx.send(());
                        }
                        if let Ok(p) = rx.try_recv() {
                            *phase.lock().unwrap() = p;
                            phases.push((p, start.elapsed()));
                            if p == "end" {
                                break;
                            }
                        }
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    for t in tasks {
                        let _ = tokio::time::timeout(Duration::from_secs(35), t).await;
                    }
                    let events = events.lock().unwrap().clone();
                    let probes = probes.lock().unwrap().clone();
                    (events, probes, phases)
                })
            });
            // Faults, timed from here.
            done_rx
                .recv_timeout(Duration::from_secs(90))
                .expect("the workload started");
            tx.send("cut").unwrap();
            lab_ref.cut("r1", "db");
            std::thread::sleep(CUT);
            lab_ref.heal("r1", "db");
            tx.send("healed").unwrap();
            std::thread::sleep(RECOVERY + Duration::from_secs(4));
            tx.send("end").unwrap();
            handle.join().expect("workload")
        })
    };
    let cut_at = phases.iter().find(|p| p.0 == "cut").unwrap().1;
    let healed_at = phases.iter().find(|p| p.0 == "healed").unwrap().1;
    let show =
        |what: &str| format!("{what}\nphases {phases:?}\nhistory {events:#?}\nprobes {probes:?}");

    // Before: both replicas serve.
    for (phase, e) in &events {
        if *phase == "before" {
            assert!(
                e.answered_rows,
                "{}",
                show(&format!("{e:?} before the cut"))
            );
        }
    }
    // During the cut: r1 answers nothing with rows once its last committed call is past;
    // r2 keeps serving.
    let during = |e: &Event| e.at > cut_at + Duration::from_millis(500) && e.at < healed_at;
    for (_, e) in events.iter().filter(|(_, e)| during(e)) {
        match e.replica {
            "r1" => assert!(
                !e.answered_rows,
                "{}",
                show(&format!("r1 answered rows while cut: {e:?}"))
            ),
            _ => assert!(
                e.answered_rows,
                "{}",
                show(&format!("r2 stopped serving: {e:?}"))
            ),
        }
    }
    // r1's probe never hangs, and says not ready (control database) while cut.
    for (_, _, (_, _, took)) in &probes {
        assert!(
            *took < Duration::from_millis(2500),
            "{}",
            show(&format!("a /readyz took {took:?}"))
        );
    }
    let not_ready = probes.iter().any(|(_, at, (status, body, _))| {
        *at > cut_at
            && *at < healed_at
            && *status == 503
            && body["reason"]
                .as_str()
                .is_some_and(|r| r.contains("control database"))
    });
    assert!(
        not_ready,
        "{}",
        show("r1's /readyz never said the control database was unreachable")
    );
    let channel_down = probes.iter().any(|(_, at, (_, body, _))| {
        *at > cut_at
            && *at < healed_at + Duration::from_secs(1)
            && body["fleet"]["channel"]
                .as_str()
                .is_some_and(|c| c.starts_with("down"))
    });
    assert!(
        channel_down,
        "{}",
        show("r1 never noticed its fleet channel was down")
    );
    // After the heal: r1 serves again within the bound.
    let back = events
        .iter()
        .find(|(_, e)| e.replica == "r1" && e.at > healed_at && e.answered_rows)
        .map(|(_, e)| e.at - healed_at);
    let back = back.unwrap_or_else(|| panic!("{}", show("r1 never served again")));
    assert!(
        back <= RECOVERY,
        "{}",
        show(&format!("r1 served again only {back:?} after the heal"))
    );
    let slowest = events
        .iter()
        .filter(|(_, e)| e.replica == "r1" && e.at + e.took > cut_at && e.at < healed_at)
        .map(|(_, e)| (e.took, e.status, e.reason.clone()))
        .max_by_key(|x| x.0);
    eprintln!(
        "fault lab: cut {CUT:?}, r1 served again {back:?} after the heal; {} calls; r1's slowest \
         call overlapping the cut: {slowest:?}",
        events.len()
    );

    // Every answered call has exactly one audit record.
    let answered: Vec<String> = events
        .iter()
        .filter(|(_, e)| e.answered_rows)
        .filter_map(|(_, e)| e.request_id.clone())
        .collect();
    let db = lab.addr("db");
    let counts = lab.within("client", move || async move {
        let (client, conn) = tokio_postgres::connect(
            &format!("host={db} user=postgres dbname=control"),
            tokio_postgres::NoTls,
        )
        .await
        .expect("control");
        tokio::spawn(conn);
        let mut counts = Vec::new();
        for id in answered {
            let n: i64 = client
                .query_one(
                    "SELECT count(*) FROM audit_records WHERE request_id = $1",
                    &[&id],
                )
                .await
                .unwrap()
                .get(0);
            counts.push((id, n));
        }
        counts
    });
    let wrong: Vec<&(String, i64)> = counts.iter().filter(|(_, n)| *n != 1).collect();
    assert!(
        wrong.is_empty(),
        "answered calls without exactly one record: {wrong:?}"
    );
    assert!(counts.len() > 50, "{} answered calls", counts.len());
}
