//! A private PostgreSQL cluster started from the installed server binaries.
//!
//! `interlock dev` runs its demo on one, and every integration test binary starts one in a
//! temporary directory. The cluster listens on 127.0.0.1 only (no Unix socket), uses
//! SCRAM password authentication for a generated superuser password, and is stopped with
//! `pg_ctl stop -m fast` when the [`Cluster`] is dropped or [`Cluster::stop`] is called.
//!
//! PostgreSQL refuses to run as root. When InterLock runs as root (containers, CI), the
//! cluster files are owned by, and the server runs as, the `postgres` system user (or
//! `nobody` when there is none).

mod binaries;
mod run_as;

use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use binaries::PgBinaries;
use run_as::RunAs;

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error(
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found on PATH or in \
         /usr/lib/postgresql/*/bin. Install them, e.g. `sudo apt-get install postgresql` on \
         Debian/Ubuntu, then run this command again."
    )]
    NotInstalled,
    #[error("port {0} on 127.0.0.1 is already in use; choose another with --pg-port or stop what is listening there")]
    PortInUse(u16),
    #[error("{step} failed: {detail}")]
    Command { step: &'static str, detail: String },
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    #[error(
        "PostgreSQL runs as the operating-system user `{user}` (it refuses to run as root), and \
         that user cannot reach {data}: {blocked} (mode {mode:o}, owned by uid {owner}) does not \
         let it through. Choose a data directory under one it can traverse (e.g. \
         /var/tmp/interlock-dev), or allow it: chmod o+x {blocked}. Nothing was started."
    )]
    Unreachable {
        user: String,
        data: String,
        blocked: String,
        mode: u32,
        owner: u32,
    },
}

/// Options for a cluster. `fast` trades durability for speed (tests only).
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    pub base_dir: PathBuf,
    /// 0 picks a free port.
    pub port: u16,
    pub fast: bool,
    /// Server settings given at every start (`-c name=value`), e.g. a preloaded library.
    pub server_settings: Vec<(String, String)>,
}

/// A running private cluster.
#[derive(Debug)]
pub struct Cluster {
    bin: PgBinaries,
    base_dir: PathBuf,
    port: u16,
    password: String,
    run_as: Option<RunAs>,
    running: bool,
    server_settings: Vec<(String, String)>,
}

/// The superuser every private cluster is created with.
pub const SUPERUSER: &str = "interlock";

impl Cluster {
    /// Creates the cluster under `base_dir/pgdata` if it does not exist yet, otherwise reuses
    /// it, and starts it. A server still running from an earlier process (e.g. after that
    /// process was killed) is adopted rather than started twice.
    pub fn start(options: &ClusterOptions) -> Result<Self, ClusterError> {
        let bin = PgBinaries::find()?;
        let run_as = RunAs::for_current_user();
        let base_dir = absolute(&options.base_dir)?;
        if let Some(r) = &run_as {
            if let Some((blocked, mode, owner)) = r.unreachable_ancestor(&base_dir) {
                return Err(ClusterError::Unreachable {
                    user: r.name(),
                    data: base_dir.display().to_string(),
                    blocked: blocked.display().to_string(),
                    mode,
                    owner,
                });
            }
        }
        create_dir(&base_dir)?;
        let data_dir = base_dir.join("pgdata");
        let password_file = base_dir.join("superuser.password");

        if !data_dir.join("PG_VERSION").is_file() {
            init(
                &bin,
                &base_dir,
                &data_dir,
                &password_file,
                run_as.as_ref(),
                options.fast,
            )?;
        }
        let password = std::fs::read_to_string(&password_file)
            .map_err(|e| ClusterError::Io(format!("reading {}", password_file.display()), e))?
            .trim()
            .to_string();

        let mut cluster = Cluster {
            bin,
            base_dir,
            port: 0,
            password,
            run_as,
            running: false,
            server_settings: options.server_settings.clone(),
        };
        if let Some(port) = cluster.running_port() {
            tracing::info!(
                port,
                "adopting the PostgreSQL server already running on this data directory"
            );
            cluster.port = port;
            cluster.running = true;
            return Ok(cluster);
        }
        // Not running: a postmaster.pid left by a crash would only confuse the next start.
        let _ = std::fs::remove_file(data_dir.join("postmaster.pid"));
        let port = if options.port == 0 {
            free_port()?
        } else {
            options.port
        };
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_err() {
            return Err(ClusterError::PortInUse(port));
        }
        cluster.port = port;
        cluster.pg_ctl_start()?;
        cluster.running = true;
        Ok(cluster)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn superuser_password(&self) -> &str {
        &self.password
    }

    /// File holding the superuser password, for secrets-by-reference configuration.
    pub fn password_file(&self) -> PathBuf {
        self.base_dir.join("superuser.password")
    }

    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    /// A libpq-style URL for the superuser on `dbname`.
    pub fn admin_dsn(&self, dbname: &str) -> String {
        format!(
            "postgres://{SUPERUSER}:{}@127.0.0.1:{}/{dbname}",
            self.password, self.port
        )
    }

    /// tokio-postgres configuration for the superuser on `dbname`.
    pub fn pg_config(&self, dbname: &str) -> tokio_postgres::Config {
        let mut c = tokio_postgres::Config::new();
        c.host("127.0.0.1")
            .port(self.port)
            .user(SUPERUSER)
            .password(self.password.clone())
            .dbname(dbname)
            .application_name("interlock-admin");
        c
    }

    /// Connects as the superuser; the connection task runs on the current tokio runtime.
    pub async fn connect(
        &self,
        dbname: &str,
    ) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
        let (client, conn) = self
            .pg_config(dbname)
            .connect(tokio_postgres::NoTls)
            .await?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "admin connection closed");
            }
        });
        Ok(client)
    }

    /// Stops the server (fast shutdown: running queries are cancelled). Idempotent.
    pub fn stop(&mut self) -> Result<(), ClusterError> {
        if !self.running {
            return Ok(());
        }
        self.running = false;
        let data_dir = self.base_dir.join("pgdata");
        let out = self.pg_ctl(&["stop", "-m", "fast", "-w", "-t", "60", "-D"], &data_dir)?;
        check(out, "pg_ctl stop")
    }

    /// Stops the server abruptly, as a crash would (tests of breaker behaviour use this).
    pub fn kill(&mut self) -> Result<(), ClusterError> {
        let data_dir = self.base_dir.join("pgdata");
        self.running = false;
        let out = self.pg_ctl(&["stop", "-m", "immediate", "-w", "-D"], &data_dir)?;
        check(out, "pg_ctl stop -m immediate")
    }

    /// Starts a stopped server again on the same port.
    pub fn restart(&mut self) -> Result<(), ClusterError> {
        if self.running {
            return Ok(());
        }
        self.pg_ctl_start()?;
        self.running = true;
        Ok(())
    }

    fn pg_ctl_start(&self) -> Result<(), ClusterError> {
        let data_dir = self.base_dir.join("pgdata");
        let log = self.base_dir.join("postgres.log");
        let mut opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''",
            self.port
        );
        for (name, value) in &self.server_settings {
            opts.push_str(&format!(" -c {name}={value}"));
        }
        let mut cmd = Command::new(self.bin.pg_ctl());
        cmd.arg("start")
            .arg("-w")
            .arg("-t")
            .arg("60")
            .arg("-D")
            .arg(&data_dir)
            .arg("-l")
            .arg(&log)
            .arg("-o")
            .arg(opts);
        let out = self.run(cmd)?;
        check(out, "pg_ctl start").map_err(|e| match e {
            ClusterError::Command { step, detail } => ClusterError::Command {
                step,
                detail: format!("{detail} (server log: {})", log.display()),
            },
            other => other,
        })
    }

    /// The port of a server already running on this data directory, if any.
    fn running_port(&self) -> Option<u16> {
        let data_dir = self.base_dir.join("pgdata");
        let out = self.pg_ctl(&["status", "-D"], &data_dir).ok()?;
        if !out.status.success() {
            return None;
        }
        // postmaster.pid line 4 is the port.
        let pid = std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?;
        pid.lines().nth(3)?.trim().parse().ok()
    }

    fn pg_ctl(&self, args: &[&str], data_dir: &Path) -> Result<Output, ClusterError> {
        let mut cmd = Command::new(self.bin.pg_ctl());
        cmd.args(args).arg(data_dir);
        self.run(cmd)
    }

    fn run(&self, mut cmd: Command) -> Result<Output, ClusterError> {
        cmd.current_dir(&self.base_dir);
        if let Some(r) = &self.run_as {
            r.apply(&mut cmd);
        }
        cmd.output()
            .map_err(|e| ClusterError::Io(format!("running {:?}", cmd.get_program()), e))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            tracing::warn!(error = %e, "stopping the private PostgreSQL cluster failed");
        }
    }
}

fn init(
    bin: &PgBinaries,
    base_dir: &Path,
    data_dir: &Path,
    password_file: &Path,
    run_as: Option<&RunAs>,
    fast: bool,
) -> Result<(), ClusterError> {
    use std::os::unix::fs::PermissionsExt;
    let password = crate::control::keys::random_token(24);
    write_private(password_file, &password)?;
    // initdb reads the password from a file the server user can read; it is removed at once.
    let pwfile = base_dir.join("initdb.pw");
    write_private(&pwfile, &password)?;
    if let Some(r) = run_as {
        r.chown(base_dir)?;
        r.chown(&pwfile)?;
        // The server user must be able to reach the base directory.
        let _ = std::fs::set_permissions(base_dir, std::fs::Permissions::from_mode(0o755));
    }
    let _ = std::fs::remove_dir_all(data_dir);
    let mut cmd = Command::new(bin.initdb());
    cmd.arg("-D")
        .arg(data_dir)
        .arg("-U")
        .arg(SUPERUSER)
        .arg(format!("--pwfile={}", pwfile.display()))
        .arg("--auth=scram-sha-256")
        .arg("--encoding=UTF8")
        .arg("--locale=C")
        .current_dir(base_dir);
    if fast {
        cmd.arg("--no-sync");
    }
    if let Some(r) = run_as {
        r.apply(&mut cmd);
    }
    let out = cmd
        .output()
        .map_err(|e| ClusterError::Io("running initdb".into(), e));
    let _ = std::fs::remove_file(&pwfile);
    check(out?, "initdb")?;

    // A runaway statement (a sort or a set-returning function in FROM, which PostgreSQL
    // materializes) stops at 1 GB of temporary files instead of filling the disk.
    let mut conf =
        String::from("\n# added by InterLock\nmax_connections = 200\ntemp_file_limit = 1GB\n");
    if fast {
        conf.push_str("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n");
    }
    let conf_path = data_dir.join("postgresql.conf");
    let mut existing = std::fs::read_to_string(&conf_path)
        .map_err(|e| ClusterError::Io(format!("reading {}", conf_path.display()), e))?;
    existing.push_str(&conf);
    std::fs::write(&conf_path, existing)
        .map_err(|e| ClusterError::Io(format!("writing {}", conf_path.display()), e))?;
    Ok(())
}

fn check(out: Output, step: &'static str) -> Result<(), ClusterError> {
    if out.status.success() {
        return Ok(());
    }
    let mut detail = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if detail.is_empty() {
        detail = String::from_utf8_lossy(&out.stdout).trim().to_string();
    }
    Err(ClusterError::Command { step, detail })
}

fn write_private(path: &Path, contents: &str) -> Result<(), ClusterError> {
    crate::secrets::write_private(path, contents)
        .map_err(|e| ClusterError::Io(format!("writing {}", path.display()), e))
}

fn create_dir(path: &Path) -> Result<(), ClusterError> {
    std::fs::create_dir_all(path)
        .map_err(|e| ClusterError::Io(format!("creating {}", path.display()), e))
}

fn absolute(path: &Path) -> Result<PathBuf, ClusterError> {
    std::path::absolute(path)
        .map_err(|e| ClusterError::Io(format!("resolving {}", path.display()), e))
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> Result<u16, ClusterError> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .map_err(|e| ClusterError::Io("finding a free port".into(), e))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| ClusterError::Io("finding a free port".into(), e))
}
