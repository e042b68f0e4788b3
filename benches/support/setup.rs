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
#[allow(dead_code)] // the load bench always names its settings
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

/// A pgbench script of one durable single-row INSERT into `table` (the audit log or one of
/// its partitions) of a record the size of an agent read's, each with a new seq, in chain
/// [`FLOOR_CHAIN`] (which `audit_chains` must name): the floor of an audit append.
#[allow(dead_code)] // not every bench measures the floor
pub fn audit_insert_script(table: &str) -> String {
    let zeros = "\\x".to_string() + &"00".repeat(32);
    format!(
        "\\set i random(1, 1000000000)\n\
         INSERT INTO {table} (seq, chain, chain_seq, at, request_id, identity, adapter, dialect, tool, \
         source_id, action, statement, fingerprint, decision, outcome, row_count, duration_us, \
         cache_hit, prev_hash, hash) VALUES (nextval('audit_records_seq'), \
         '{FLOOR_CHAIN}', :i, now(), md5(:i::text), 'demo-agent', 'mcp', \
         '2026-07-28', 'interlock_query', 'shop', 'read', \
         'SELECT id, name, country FROM public.customers WHERE id = ' || :i || ' LIMIT 1001', \
         '0123456789abcdef0123456789abcdef', '{{\"verdict\": \"allowed\"}}', 'ok', 1, 400, false, \
         '{zeros}', '{zeros}');\n"
    )
}

/// The chain the floor's records are in.
const FLOOR_CHAIN: &str = "00000000-0000-0000-0000-0000000f1002";

/// Names [`FLOOR_CHAIN`] in `audit_chains` (once), before the floor's inserts.
#[allow(dead_code)] // not every bench measures the floor
pub async fn name_floor_chain(control: &tokio_postgres::Client) {
    control
        .execute(
            "INSERT INTO audit_chains (chain, writer) VALUES ($1::text::uuid, 'floor')
             ON CONFLICT (chain) DO NOTHING",
            &[&FLOOR_CHAIN],
        )
        .await
        .expect("the floor's chain");
}
