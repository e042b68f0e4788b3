//! Load benchmark: direct PostgreSQL vs governed `interlock_query` through `POST /mcp`, for
//! the demo point query, at 1, 8 and 32 connections, result cache off and on, in one run on
//! one machine (load generator, gateway and PostgreSQL co-located). Prints throughput, p50
//! and p99, and ratios against the direct baseline measured in the same run.
//!
//! Run: `cargo bench --bench load` (options: `-- --seconds 5`). See BENCHMARKS.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use interlock::pgcluster::{Cluster, ClusterOptions};
use interlock::Settings;
use serde_json::json;

const POINT: &str = "SELECT id, name, country FROM public.customers WHERE id = $1";
const LEVELS: [usize; 3] = [1, 8, 32];

#[derive(Debug, Clone, Copy)]
struct Measured {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

fn summarize(mut lat: Vec<f64>, elapsed: Duration, errors: u64) -> Measured {
    lat.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        lat.get(((lat.len().max(1) - 1) as f64 * p) as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    Measured {
        rps: lat.len() as f64 / elapsed.as_secs_f64(),
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        errors,
    }
}

/// A cheap per-task pseudo-random id in 1..=1000.
fn next_id(state: &mut u64) -> i64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state % 1000) as i64 + 1
}

async fn direct(cluster: &Cluster, conns: usize, secs: u64) -> Measured {
    let mut tasks = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(secs);
    for t in 0..conns {
        let client = cluster.connect("shop").await.expect("connect");
        tasks.push(tokio::spawn(async move {
            let stmt = client.prepare(POINT).await.expect("prepare");
            let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
            let (mut lat, mut errors) = (Vec::new(), 0u64);
            while Instant::now() < deadline {
                let id = next_id(&mut seed);
                let started = Instant::now();
                match client.query(&stmt, &[&id]).await {
                    Ok(_) => lat.push(started.elapsed().as_secs_f64() * 1000.0),
                    Err(_) => errors += 1,
                }
            }
            (lat, errors)
        }));
    }
    collect(tasks, secs).await
}

async fn governed(endpoint: &str, key: &str, conns: usize, secs: u64) -> Measured {
    let mut tasks = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(secs);
    for t in 0..conns {
        let (endpoint, key) = (endpoint.to_string(), key.to_string());
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::builder().no_proxy().pool_max_idle_per_host(1).build().expect("client");
            let mut seed = 0xD1B5_4A32_D192_ED03u64 ^ (t as u64 + 1);
            let (mut lat, mut errors) = (Vec::new(), 0u64);
            while Instant::now() < deadline {
                let id = next_id(&mut seed);
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "interlock_query", "arguments": {"source_id": "shop", "sql": POINT, "params": [id]}}});
                let started = Instant::now();
                let res = client
                    .post(&endpoint)
                    .header("Content-Type", "application/json")
                    .header("Accept", "application/json, text/event-stream")
                    .header("MCP-Protocol-Version", "2025-11-25")
                    .bearer_auth(&key)
                    .json(&body)
                    .send()
                    .await;
                let ok = match res {
                    Ok(r) if r.status() == 200 => r.text().await.is_ok_and(|t| t.contains("\"result\"")),
                    _ => false,
                };
                if ok {
                    lat.push(started.elapsed().as_secs_f64() * 1000.0);
                } else {
                    errors += 1;
                }
            }
            (lat, errors)
        }));
    }
    collect(tasks, secs).await
}

async fn collect(tasks: Vec<tokio::task::JoinHandle<(Vec<f64>, u64)>>, secs: u64) -> Measured {
    let (mut all, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await.expect("join");
        all.extend(l);
        errors += e;
    }
    summarize(all, Duration::from_secs(secs), errors)
}

fn main() {
    let secs: u64 = std::env::args()
        .skip_while(|a| a != "--seconds")
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let dir = tempfile::Builder::new()
        .prefix("interlock-load-")
        .tempdir()
        .expect("dir");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
    }
    let cluster = Arc::new(
        Cluster::start(&ClusterOptions {
            base_dir: dir.path().join("pg"),
            port: 0,
            fast: false, // durable: fsync on, as in production
        })
        .expect("cluster"),
    );
    let cl = cluster.clone();
    actix_rt::System::with_tokio_rt(|| tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("rt"))
        .block_on(async move {
            interlock::demo::prepare_databases(&cl).await.expect("databases");
            let mut settings = Settings::load_with_env(None, Vec::<(String, String)>::new()).expect("settings");
            interlock::demo::control_settings(&mut settings, &cl);
            settings.server.listen = "127.0.0.1:0".into();
            settings.log.level = "warn".into();
            settings.sources.refresh_interval_ms = 500;
            let gateway = interlock::Gateway::start(settings).await.expect("gateway");
            let keys = interlock::demo::seed(&gateway.state().control, &cl).await.expect("seed");
            gateway.state().sources.reload().await.expect("reload");
            gateway.state().sources.refresh_catalog("shop").await.expect("catalog");
            let endpoint = format!("http://{}/mcp", gateway.addr());
            let control = gateway.state().control.clone();
            let _handle = gateway.spawn();
            // Warm up: catalog scan, pools, prepared statements.
            governed(&endpoint, &keys.agent_key, 4, 1).await;

            println!("InterLock load benchmark: {secs} s per cell, point query on public.customers (1,000 rows)");
            println!("{:<6} {:>11} {:>11} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}", "conns", "mode", "req/s", "ratio", "p50 ms", "p99 ms", "+p50 ms", "errors", "");
            for ttl in [0u32, 60_000] {
                interlock::control::sources::set_cache_ttl(&control, "shop", ttl).await.expect("ttl");
                tokio::time::sleep(Duration::from_millis(1200)).await;
                let mode = if ttl == 0 { "cache off" } else { "cache on" };
                for conns in LEVELS {
                    let d = direct(&cl, conns, secs).await;
                    let g = governed(&endpoint, &keys.agent_key, conns, secs).await;
                    println!("{conns:<6} {:>11} {:>11.0} {:>7} {:>9.3} {:>9.3} {:>9} {:>9}", "direct", d.rps, "1.00", d.p50_ms, d.p99_ms, "", d.errors);
                    println!(
                        "{conns:<6} {mode:>11} {:>11.0} {:>7.2} {:>9.3} {:>9.3} {:>9.3} {:>9}",
                        g.rps,
                        g.rps / d.rps,
                        g.p50_ms,
                        g.p99_ms,
                        g.p50_ms - d.p50_ms,
                        g.errors
                    );
                }
            }
        });
    drop(cluster);
}
