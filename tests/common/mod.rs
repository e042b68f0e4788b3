//! Test harness: one real PostgreSQL cluster per test binary, a fresh control database per
//! test, and the gateway in-process on 127.0.0.1:0.
//!
//! The cluster lives in a temporary directory and is stopped (and the directory removed)
//! when the test binary exits, through an `atexit` hook: Rust never drops statics.
#![allow(dead_code)]

pub mod activity;
pub mod approvals;
pub mod control_statements;
pub mod env;
pub mod http;
pub mod issuer;
pub mod mcp;
pub mod process;
pub mod receiver;
pub mod records;
pub mod redis;
pub mod tsa;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use interlock::pgcluster::{Cluster, ClusterOptions};
use interlock::Settings;

struct Shared {
    cluster: Cluster,
    dir: PathBuf,
    port: u16,
    password_file: PathBuf,
}

static SHARED: OnceLock<Mutex<Option<Shared>>> = OnceLock::new();
static TEMPLATE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
static COUNTER: AtomicUsize = AtomicUsize::new(0);

extern "C" fn stop_cluster_at_exit() {
    if let Some(m) = SHARED.get() {
        if let Ok(mut guard) = m.lock() {
            if let Some(mut shared) = guard.take() {
                let recording = control_statements::record_dir().map(|dir| {
                    let normalized = control_statements::normalized(
                        shared.port,
                        shared.cluster.superuser_password(),
                    );
                    (dir, normalized)
                });
                let _ = shared.cluster.stop();
                // Stopped first: the server's log is complete once it has stopped.
                if let Some((dir, normalized)) = recording {
                    let log = shared.cluster.base_dir().join("pgdata/log");
                    let recorded = control_statements::Recorded {
                        statements: control_statements::from_log(&log),
                        normalized,
                    };
                    control_statements::write(&dir, &recorded);
                }
                let _ = std::fs::remove_dir_all(&shared.dir);
            }
        }
    }
}

/// Connection facts of the shared cluster.
#[derive(Debug, Clone)]
pub struct ClusterInfo {
    pub port: u16,
    pub password_file: PathBuf,
    pub password: String,
}

/// Starts the binary's cluster on first use.
pub fn cluster() -> ClusterInfo {
    let m = SHARED.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("interlock-test-")
            .tempdir()
            .expect("temp dir")
            .keep();
        // The server may run as another user (when tests run as root): let it in.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let cluster = Cluster::start(&ClusterOptions {
            base_dir: dir.join("pg"),
            port: 0,
            fast: true,
            server_settings: control_statements::server_settings(),
        })
        .expect("start the test PostgreSQL cluster");
        if control_statements::record_dir().is_some() {
            control_statements::prepare(cluster.port(), cluster.superuser_password());
        }
        // SAFETY: registering a plain extern "C" function with no captured state.
        unsafe {
            libc::atexit(stop_cluster_at_exit);
        }
        let port = cluster.port();
        let password_file = cluster.password_file();
        Mutex::new(Some(Shared {
            cluster,
            dir,
            port,
            password_file,
        }))
    });
    let guard = m.lock().expect("cluster lock");
    let shared = guard.as_ref().expect("cluster running");
    ClusterInfo {
        port: shared.port,
        password_file: shared.password_file.clone(),
        password: shared.cluster.superuser_password().to_string(),
    }
}

/// Runs `f` with the shared cluster mutably (stop/restart tests).
pub fn with_cluster<R>(f: impl FnOnce(&mut Cluster) -> R) -> R {
    cluster();
    let m = SHARED.get().expect("cluster");
    let mut guard = m.lock().expect("cluster lock");
    f(&mut guard.as_mut().expect("cluster running").cluster)
}

/// A superuser connection to `dbname` on the shared cluster.
pub async fn admin(dbname: &str) -> tokio_postgres::Client {
    let info = cluster();
    let mut c = tokio_postgres::Config::new();
    c.host("127.0.0.1")
        .port(info.port)
        .user(interlock::pgcluster::SUPERUSER)
        .password(info.password)
        .dbname(dbname);
    let (client, conn) = c
        .connect(tokio_postgres::NoTls)
        .await
        .expect("admin connect");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// The catalog of the database `client` is connected to, as the product builds it (its own
/// scanner, its own conversion), resolving unqualified names in `search_path`.
pub async fn catalog_of(
    client: &tokio_postgres::Client,
    search_path: &str,
) -> interlock::sql::Catalog {
    let scan = interlock::sources::postgres::catalog_scan::scan(client, 10_000)
        .await
        .expect("catalog scan");
    let stored = interlock::control::catalog::StoredCatalog {
        scanned_at: chrono::Utc::now(),
        truncated: scan.truncated,
        relations: scan.relations,
    };
    interlock::sources::catalog::to_catalog(&stored, &[search_path.to_string()])
}

/// A new, empty database with a unique name.
pub async fn fresh_database(prefix: &str) -> String {
    let name = format!(
        "{prefix}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    );
    admin("postgres")
        .await
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .expect("create database");
    name
}

/// A fresh control database with every migration applied (cloned from a migrated template).
pub async fn fresh_control_db() -> String {
    TEMPLATE
        .get_or_init(|| async {
            admin("postgres")
                .await
                .batch_execute("CREATE DATABASE control_template")
                .await
                .expect("create template");
            let control = settings_for("control_template").control;
            let pool = interlock::control::connect_pool(&control).expect("pool");
            let locks = interlock::control::migrate::LockPolicy::from_settings(&control);
            interlock::control::migrate::migrate(&pool, locks)
                .await
                .expect("migrate template");
            pool.close();
        })
        .await;
    let name = format!(
        "control_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    );
    admin("postgres")
        .await
        .batch_execute(&format!("CREATE DATABASE {name} TEMPLATE control_template"))
        .await
        .expect("clone control database");
    name
}

/// Settings pointing at `control_db` on the shared cluster, listening on 127.0.0.1:0.
pub fn settings_for(control_db: &str) -> Settings {
    let info = cluster();
    let mut s =
        Settings::load_with_env(None, Vec::<(String, String)>::new()).expect("default settings");
    s.server.listen = "127.0.0.1:0".into();
    s.server.workers = 2;
    s.server.shutdown_timeout_secs = 1;
    s.control.port = info.port;
    s.control.dbname = control_db.into();
    s.control.user = if control_statements::record_dir().is_some() {
        control_statements::GATEWAY_ROLE.into()
    } else {
        interlock::pgcluster::SUPERUSER.into()
    };
    s.control.password_file = info.password_file.to_string_lossy().into_owned();
    s.control.pool_size = 4;
    s
}

/// A gateway running on its own thread and actix system.
pub struct TestGateway {
    pub addr: SocketAddr,
    pub settings: Settings,
    /// Its runtime (e.g. to inject faults into its actors).
    pub state: std::sync::Arc<interlock::AppState>,
    handle: actix_web::dev::ServerHandle,
}

impl TestGateway {
    pub fn start(settings: Settings) -> Self {
        Self::try_start(settings).expect("gateway start")
    }

    /// Starts a gateway, or says why it would not start.
    pub fn try_start(settings: Settings) -> Result<Self, String> {
        let (tx, rx) = std::sync::mpsc::channel();
        let s = settings.clone();
        std::thread::spawn(move || {
            actix_rt::System::new().block_on(async move {
                match interlock::Gateway::start(s).await {
                    Ok(gw) => {
                        let addr = gw.addr();
                        let state = gw.state().clone();
                        let handle = gw.spawn();
                        let _ = tx.send(Ok((addr, state, handle)));
                        // The system lives as long as the test binary.
                        futures_util::future::pending::<()>().await;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(interlock::causes::with_causes(&e)));
                    }
                }
            });
        });
        let (addr, state, handle) = rx.recv().expect("gateway thread")?;
        Ok(TestGateway {
            addr,
            settings,
            state,
            handle,
        })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Stops serving (in-flight requests are dropped).
    pub async fn stop(self) {
        self.handle.stop(false).await;
    }
}

/// Writes a configuration file pointing at `control_db` on the shared cluster (password by
/// reference), plus `extra` TOML, for tests that run the binary as a child process.
pub fn control_config_file(dir: &std::path::Path, control_db: &str, extra: &str) -> PathBuf {
    let s = settings_for(control_db);
    let path = dir.join(format!(
        "{control_db}-{}.toml",
        COUNTER.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::write(
        &path,
        format!(
            "[control]\nport = {}\ndbname = \"{}\"\nuser = \"{}\"\npassword_file = \"{}\"\n{extra}",
            s.control.port, s.control.dbname, s.control.user, s.control.password_file
        ),
    )
    .expect("write config");
    path
}
