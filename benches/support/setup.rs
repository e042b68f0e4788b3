//! What every bench that starts its own PostgreSQL shares: its command-line numbers and a
//! durable cluster in a temporary directory.

use interlock::pgcluster::{Cluster, ClusterOptions};

/// The number after `name` on the command line, or `default`.
pub fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A durable cluster (fsync on, as in production) on a free loopback port, in a temporary
/// directory named `prefix…` that the `postgres` user can traverse. Keep the directory for
/// as long as the cluster runs.
pub fn durable_cluster(prefix: &str) -> (tempfile::TempDir, Cluster) {
    durable_cluster_with(prefix, Vec::new())
}

/// [`durable_cluster`], started with `server_settings` too (`-c name=value`, e.g. a
/// preloaded library).
pub fn durable_cluster_with(
    prefix: &str,
    server_settings: Vec<(String, String)>,
) -> (tempfile::TempDir, Cluster) {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("dir");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    let cluster = Cluster::start(&ClusterOptions {
        base_dir: dir.path().join("pg"),
        port: 0,
        fast: false,
        server_settings,
    })
    .expect("cluster");
    (dir, cluster)
}
