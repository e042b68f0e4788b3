//! Load benchmark: governed calls through `POST /mcp` against the same work sent straight to
//! PostgreSQL, paired in one run on one machine (load generator, gateway and PostgreSQL
//! co-located). Prints throughput, p50 and p99, ratios against the baseline measured in the
//! same run, the gateway's per-stage breakdown of each governed cell (from its own
//! `/metrics`), and a memory line.
//!
//! Cells:
//! - **agent**: agent-style SQL, a new literal in every statement (as agents write it);
//!   baseline: the same texts over the simple protocol;
//! - **param**: the demo point query with `$1`; baseline: a prepared statement;
//! - every one of these three (agent, param, cache hit) also against **pgbench**, the
//!   baseline of record (libpq; the agent texts over the simple protocol with pgbench's
//!   variables substituted into each, a new literal every time; the point query prepared):
//!   the Rust baseline (tokio-postgres) is a slower client, and ratios against it alone
//!   flatter the gateway;
//! - **as sent** (beside the agent cell): the same texts as the gateway sends them to the
//!   source (under the row cap, one unnamed extended-protocol statement), flat out and paced
//!   at the governed cell's rate; the source's CPU per statement of each against pgbench's
//!   says how much of the governed read's source CPU is the protocol and the cap, how much
//!   the rate, and how much is left;
//! - **param as caller**: the same with `identity_propagation = "settings"` on the source
//!   (the caller's identity set on each connection's session when its caller changes); the other
//!   cells run with the source carrying no identity;
//! - **cache hit**: the param query with the result cache on and warm (every hit still
//!   writes a durable audit record); baseline: the prepared statement;
//! - **agent, cost admitted**: the agent cell with cost admission on (every read planned
//!   first, as its caller, then run), against the same baseline as the agent cell;
//! - **tracing off / traced 100 % / traced 1 % / traced, hung collector**: the agent cell on
//!   four more gateways of the same fleet, started alike: without tracing, exporting
//!   OpenTelemetry traces of every call or of one in a hundred to an OTLP sink in this
//!   process, and every call to a collector that accepts and never answers (the bounded
//!   queue full, spans dropped); two interleaved rounds, against the agent cell's baseline;
//! - **mask on / mask off** (`--masks-only 1`): the agent cell, and the same reads returning
//!   `email`, with the demo's mask on `public.customers.email` (a read of `email` runs through
//!   a derived table of masked values: masks at the scan) and with it removed, two interleaved
//!   rounds, against the agent cell's baseline; the ratio of the two is what masking costs;
//! - **analytic** (`--analytic-only 1` runs only the agent and analytic cells): a 15-line
//!   join and aggregate with a new `interval '… days'`, numeric and `HAVING` literal in every
//!   statement, at 1 and 8 connections;
//! - **tools/list**, against `/healthz` (no database, no audit);
//! - **memory**: gateway and source-backend private memory after the first 20 s and at the
//!   end of 60 s of agent-style load at 32 connections.
//!
//! Run: `cargo bench --bench load` (options: `-- --seconds 5 --memory-seconds 60 --workers 0`;
//! `--profile-seconds N` runs only N s of governed agent load at 32 connections, for `perf`
//! (with `--profile-traced 1`, every call traced to an OTLP sink; `--profile-conns N` at N
//! connections; `--profile-statements 1` then lists what each database ran per call, from
//! pg_stat_statements); `--writer-per-worker 0` commits every record through the one
//! supervised audit writer instead of the HTTP workers' own; `--commit-delay-us N` starts
//! the cluster with PostgreSQL's group commit on (`commit_delay` N µs, `commit_siblings` 1);
//! `--cost-only 1` runs only the agent cells, with cost admission off and on;
//! `--traces-only 1` runs only the agent cells, with tracing off, at 100 % and at 1 %;
//! `--masks-only 1` runs only the agent cells with the demo's mask on and off).
//! See BENCHMARKS.md.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use interlock::control::sources::Propagation;
use interlock::pgcluster::Cluster;
use interlock::sql::cap::{capped, CapForm};
use interlock::Settings;
use serde_json::json;

#[path = "support/otlp.rs"]
mod otlp;
#[path = "support/setup.rs"]
mod setup;
use otlp::{otlp_hole, otlp_sink};
use setup::arg;

const POINT: &str = "SELECT id, name, country FROM public.customers WHERE id = $1";
const LEVELS: [usize; 3] = [1, 8, 32];

#[derive(Debug, Clone, Copy)]
struct Measured {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
    /// CPU per call, µs, while the cell ran.
    cpu: Cpu,
}

/// CPU per call (µs) of the gateway's threads and of the PostgreSQL backends of each
/// database, sampled from `/proc/<pid>/stat` while a cell runs.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    gateway: f64,
    source: f64,
    control: f64,
}

/// What a cell's CPU is charged to: this process's threads less the load generator's
/// (`load-gen`, the benchmark's own runtime), and backends told apart by database.
struct Probe {
    admin: tokio_postgres::Client,
    control_db: String,
}

static PROBE: std::sync::OnceLock<Probe> = std::sync::OnceLock::new();

/// The command name and the fields after it of `/proc/<path>/stat`, from the 3rd (state)
/// on, each as a number (state, not one, reads as 0).
fn stat(path: &str) -> Option<(String, Vec<u64>)> {
    let stat = std::fs::read_to_string(format!("/proc/{path}/stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat[open + 1..close].to_string();
    let fields = stat
        .get(close + 2..)?
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    Some((comm, fields))
}

/// The command name and clock ticks (utime + stime, the 14th and 15th fields) of
/// `/proc/<path>/stat`.
fn ticks(path: &str) -> Option<(String, u64)> {
    let (comm, fields) = stat(path)?;
    Some((comm, fields.get(11)? + fields.get(12)?))
}

/// Clock ticks (cutime + cstime, the 16th and 17th fields) of the children `pid` has reaped.
fn reaped_ticks(pid: u32) -> u64 {
    stat(&pid.to_string())
        .and_then(|(_, f)| Some(f.get(13)? + f.get(14)?))
        .unwrap_or(0)
}

/// Microseconds per call of `ticks` clock ticks spent on `calls` calls.
fn per_call_us(ticks: u64, calls: u64) -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = match unsafe { libc::sysconf(libc::_SC_CLK_TCK) } {
        n if n > 0 => n as f64,
        _ => 100.0,
    };
    ticks as f64 * 1e6 / hz / calls.max(1) as f64
}

/// Ticks of this process's threads, less the load generator's.
fn gateway_ticks() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .map(|dir| {
            dir.filter_map(|t| t.ok())
                .filter_map(|t| ticks(&format!("self/task/{}", t.file_name().to_string_lossy())))
                .filter(|(comm, _)| !comm.starts_with("load-gen"))
                .map(|(_, t)| t)
                .sum()
        })
        .unwrap_or(0)
}

/// Ticks of each backend of `db` (the gateway's: on `shop` those named `interlock`), or of
/// the given pids.
async fn backend_ticks(db: &str, pids: Option<&[u32]>) -> BTreeMap<u32, u64> {
    let Some(probe) = PROBE.get() else {
        return BTreeMap::new();
    };
    let pids: Vec<u32> = match pids {
        Some(p) => p.to_vec(),
        None => probe
            .admin
            .query(
                "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND (datname <> 'shop' OR application_name = 'interlock')",
                &[&db],
            )
            .await
            .expect("pg_stat_activity")
            .iter()
            .map(|r| r.get::<_, i32>(0) as u32)
            .collect(),
    };
    pids.into_iter()
        .filter_map(|p| ticks(&p.to_string()).map(|(_, t)| (p, t)))
        .collect()
}

/// A CPU sample at the start of a cell.
struct CpuStart {
    gateway: u64,
    source: BTreeMap<u32, u64>,
    control: BTreeMap<u32, u64>,
}

fn control_db() -> String {
    PROBE
        .get()
        .map(|p| p.control_db.clone())
        .unwrap_or_default()
}

async fn cpu_start(direct: Option<&[u32]>) -> CpuStart {
    CpuStart {
        gateway: gateway_ticks(),
        source: backend_ticks("shop", direct).await,
        control: backend_ticks(&control_db(), None).await,
    }
}

/// CPU per call since `start` (backends that appeared meanwhile count from zero). A direct
/// cell charges only its own backends.
async fn cpu_since(start: CpuStart, direct: Option<&[u32]>, calls: u64) -> Cpu {
    let per_call = |t: u64| per_call_us(t, calls);
    let grown = |before: &BTreeMap<u32, u64>, after: BTreeMap<u32, u64>| -> u64 {
        after
            .into_iter()
            .map(|(pid, t)| t.saturating_sub(before.get(&pid).copied().unwrap_or(0)))
            .sum()
    };
    let gateway = gateway_ticks().saturating_sub(start.gateway);
    let source = grown(&start.source, backend_ticks("shop", direct).await);
    let control = grown(&start.control, backend_ticks(&control_db(), None).await);
    match direct {
        Some(_) => Cpu {
            gateway: 0.0,
            source: per_call(source),
            control: 0.0,
        },
        None => Cpu {
            gateway: per_call(gateway),
            source: per_call(source),
            control: per_call(control),
        },
    }
}

fn summarize(mut lat: Vec<f64>, elapsed: Duration, errors: u64, cpu: Cpu) -> Measured {
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
        cpu,
    }
}

/// A cheap per-task pseudo-random number in 1..=n.
fn next(state: &mut u64, n: u64) -> i64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state % n) as i64 + 1
}

/// Agent-style text: a new literal each time (two of them, so texts rarely repeat).
fn agent_sql(seed: &mut u64) -> String {
    format!(
        "SELECT id, name, country FROM public.customers WHERE id = {} AND {} > 0",
        next(seed, 1000),
        next(seed, 1_000_000_000)
    )
}

/// Agent-style text that returns the demo's masked column.
fn agent_masked_sql(seed: &mut u64) -> String {
    format!(
        "SELECT id, name, email FROM public.customers WHERE id = {} AND {} > 0",
        next(seed, 1000),
        next(seed, 1_000_000_000)
    )
}

/// A 15-line analytic read as analysts write it: a join, a filter on a moving date window
/// (`interval '… days'`), a numeric threshold and a `HAVING` bound, each new every time.
/// `{days}`, `{cents}` and `{orders}` are pgbench's spelling of the variables.
const ANALYTIC: &str = "SELECT c.country,
       date_trunc('week', o.created_at) AS week,
       count(*) AS orders,
       count(DISTINCT o.customer_id) AS buyers,
       sum(o.total_cents) / 100.0 AS revenue,
       avg(o.total_cents) FILTER (WHERE o.status = 'paid') AS avg_paid_cents
  FROM public.orders o
  JOIN public.customers c ON c.id = o.customer_id
 WHERE o.created_at >= now() - interval '{days} days'
   AND o.total_cents > {cents}
   AND c.country IN ('DE', 'FR', 'US')
 GROUP BY c.country, date_trunc('week', o.created_at)
HAVING count(*) > {orders}
 ORDER BY week DESC, revenue DESC
 LIMIT 50";

/// The analytic read with new literals.
fn analytic_sql(seed: &mut u64) -> String {
    ANALYTIC
        .replace("{days}", &next(seed, 400).to_string())
        .replace("{cents}", &next(seed, 5000).to_string())
        .replace("{orders}", &(next(seed, 3) - 1).to_string())
}

#[derive(Clone, Copy, PartialEq)]
enum Direct {
    /// Agent-style texts over the simple protocol.
    Simple,
    /// The analytic read, new literals each time, over the simple protocol.
    Analytic,
    /// The point query, prepared once per connection.
    Prepared,
    /// The agent texts as the gateway sends them to the source: under the source's row cap
    /// `max_rows` (` LIMIT max_rows + 1`) as one unnamed extended-protocol statement with
    /// binary results (Parse, Bind, Describe, Execute, Sync in one flight); with `pace`, at
    /// that many statements per second over all connections (the governed cell's rate, so
    /// the backends sleep between statements as the gateway's do).
    AsSent { max_rows: u64, pace: Option<f64> },
}

/// The direct baseline: `conns` connections opened and the point query prepared on each
/// before the clock starts, as a pooled client would have them.
async fn direct(cluster: &Cluster, how: Direct, conns: usize, secs: u64) -> Measured {
    let mut ready = Vec::new();
    let mut pids = Vec::new();
    for _ in 0..conns {
        let client = cluster.connect("shop").await.expect("connect");
        let stmt = client.prepare(POINT).await.expect("prepare");
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .expect("pid")
            .get(0);
        pids.push(pid as u32);
        ready.push((Arc::new(client), stmt));
    }
    // The connections stay open until their backends' CPU is read (a closed one's backend
    // exits, and its ticks with it).
    let open: Vec<_> = ready.iter().map(|(c, _)| c.clone()).collect();
    let cpu = cpu_start(Some(&pids)).await;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    // A paced connection's statements start one interval apart.
    let interval = match how {
        Direct::AsSent {
            pace: Some(rate), ..
        } if rate > 0.0 => Some(Duration::from_secs_f64(conns as f64 / rate)),
        _ => None,
    };
    let mut tasks = Vec::new();
    for (t, (client, stmt)) in ready.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
            let (mut lat, mut errors) = (Vec::new(), 0u64);
            let mut due = tokio::time::Instant::now();
            while Instant::now() < deadline {
                if let Some(every) = interval {
                    tokio::time::sleep_until(due).await;
                    due += every;
                }
                let started = Instant::now();
                let ok = match how {
                    Direct::Simple => client.simple_query(&agent_sql(&mut seed)).await.is_ok(),
                    Direct::Analytic => client.simple_query(&analytic_sql(&mut seed)).await.is_ok(),
                    Direct::Prepared => {
                        let id = next(&mut seed, 1000);
                        client.query(&stmt, &[&id]).await.is_ok()
                    }
                    Direct::AsSent { max_rows, .. } => {
                        let sent = capped(&agent_sql(&mut seed), CapForm::Appended, max_rows);
                        client.query_typed(&sent, &[]).await.is_ok()
                    }
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
    let measured = collect(tasks, started, cpu, Some(&pids)).await;
    drop(open);
    measured
}

/// What pgbench sends in its baseline.
#[derive(Clone, Copy, PartialEq)]
enum Pgbench {
    /// The agent texts, two new literals in each (pgbench substitutes its variables into
    /// the text), over the simple protocol.
    AgentSimple,
    /// The point query, prepared once per connection.
    PointPrepared,
    /// The analytic read, new literals each time, over the simple protocol.
    AnalyticSimple,
    /// The floor of the audit append: one durable single-row INSERT of a record the size
    /// of an agent read's into the control database's audit log, prepared.
    AuditInsert,
}

/// The baseline of record: pgbench (libpq, C) on `conns` connections for `secs`, latencies
/// from its per-transaction log. The source's CPU is what its backends used: they exit when
/// pgbench ends, and the postmaster, which reaps them, accumulates their CPU time.
async fn pgbench(cluster: &Cluster, how: Pgbench, conns: usize, secs: u64) -> Measured {
    let dir = cluster.base_dir().join(format!("pgbench-{conns}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("pgbench dir");
    let script = dir.join("script.sql");
    let (text, mode) = match how {
        Pgbench::AgentSimple => (
            "\\set id random(1, 1000)\n\\set k random(1, 1000000000)\n\
             SELECT id, name, country FROM public.customers WHERE id = :id AND :k > 0;\n"
                .to_string(),
            "simple",
        ),
        Pgbench::PointPrepared => (
            "\\set id random(1, 1000)\n\
             SELECT id, name, country FROM public.customers WHERE id = :id;\n"
                .to_string(),
            "prepared",
        ),
        Pgbench::AnalyticSimple => (
            format!(
                "\\set days random(1, 400)\n\\set cents random(1, 5000)\n\\set orders random(0, 2)\n{};\n",
                ANALYTIC
                    .replace("{days}", ":days")
                    .replace("{cents}", ":cents")
                    .replace("{orders}", ":orders")
                    .replace('\n', " ")
            ),
            "simple",
        ),
        Pgbench::AuditInsert => (setup::audit_insert_script("audit_records"), "prepared"),
    };
    std::fs::write(&script, text).expect("script");
    let postmaster: u32 = std::fs::read_to_string(cluster.base_dir().join("pgdata/postmaster.pid"))
        .ok()
        .and_then(|t| t.lines().next().and_then(|l| l.trim().parse().ok()))
        .expect("postmaster pid");
    let reaped = || reaped_ticks(postmaster);
    let before = reaped();
    let threads = conns.min(2).to_string();
    let dsn = match how {
        Pgbench::AuditInsert => cluster.admin_dsn(&control_db()),
        _ => cluster.admin_dsn("shop"),
    };
    let prefix = dir.join("log");
    let args: Vec<String> = vec![
        "-n".into(),
        "-c".into(),
        conns.to_string(),
        "-j".into(),
        threads,
        "-M".into(),
        mode.into(),
        "-T".into(),
        secs.to_string(),
        "-l".into(),
        format!("--log-prefix={}", prefix.display()),
        "-f".into(),
        script.display().to_string(),
        dsn,
    ];
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("pgbench").args(&args).output()
    })
    .await
    .expect("pgbench task")
    .expect("pgbench (postgresql-client)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let failed: u64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("number of failed transactions: "))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    // Each log line: client, transaction, latency in µs, script, epoch s, µs.
    let mut lat = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("pgbench logs").flatten() {
        if !entry.file_name().to_string_lossy().starts_with("log.") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        lat.extend(text.lines().filter_map(|l| {
            l.split_whitespace()
                .nth(2)?
                .parse::<f64>()
                .ok()
                .map(|us| us / 1000.0)
        }));
    }
    assert!(
        !lat.is_empty(),
        "pgbench ran nothing: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let calls = lat.len() as u64;
    // pgbench has exited, but its backends may still be exiting: wait until the reaped
    // time stops growing.
    let mut after = reaped();
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = reaped();
        if now == after && now > before {
            break;
        }
        after = now;
    }
    let cpu = Cpu {
        gateway: 0.0,
        source: per_call_us(after.saturating_sub(before), calls),
        control: 0.0,
    };
    summarize(lat, Duration::from_secs(secs), failed, cpu)
}

/// `x` as a multiple of a baseline's source CPU, or "—" when the baseline used none worth
/// dividing by (a baseline that touches no database, or one whose CPU could not be read).
fn times(x: f64, base: f64) -> String {
    match base >= 1.0 {
        true => format!("{:.2}×", x / base),
        false => "—".to_string(),
    }
}

/// The pgbench baseline's line, and the governed cell against it.
fn print_pgbench(label: &str, conns: usize, p: Measured, g: Measured) {
    println!(
        "{conns:<6} {:>22} {:>9.0} {:>7} {:>9.3} {:>9.3} {:>9} {:>7}",
        format!("{label} pgbench"),
        p.rps,
        "1.00",
        p.p50_ms,
        p.p99_ms,
        "",
        p.errors
    );
    println!(
        "{:<6} {:>22} governed {:.2}× pgbench, +p50 {:.3} ms; pgbench's source {:.0} µs per call, governed's {:.0} ({})",
        "",
        "vs pgbench",
        g.rps / p.rps,
        g.p50_ms - p.p50_ms,
        p.cpu.source,
        g.cpu.source,
        times(g.cpu.source, p.cpu.source)
    );
}

/// The demo source's row cap, as the gateway reads it for every call.
async fn source_max_rows(cluster: &Cluster) -> u64 {
    let control = cluster.connect(&control_db()).await.expect("control");
    let max_rows: i32 = control
        .query_one("SELECT max_rows FROM sources WHERE id = 'shop'", &[])
        .await
        .expect("the demo source's row cap")
        .get(0);
    u64::try_from(max_rows).expect("a row cap is not negative")
}

/// Where the governed read's source CPU goes beyond pgbench's: the same texts as the
/// gateway sends them (the protocol and the row cap), and those at the governed rate (a
/// backend woken for each statement rather than kept busy).
fn print_as_sent(p: Measured, sent: Measured, paced: Measured, g: Measured) {
    println!(
        "{:<6} {:>22} source µs per statement: pgbench {:.0} · as sent {:.0} ({}) · as sent at {:.0}/s {:.0} ({}) · governed {:.0} ({})",
        "",
        "as sent",
        p.cpu.source,
        sent.cpu.source,
        times(sent.cpu.source, p.cpu.source),
        paced.rps,
        paced.cpu.source,
        times(paced.cpu.source, p.cpu.source),
        g.cpu.source,
        times(g.cpu.source, paced.cpu.source),
    );
}

#[derive(Clone, Copy, PartialEq)]
enum Governed {
    /// `interlock_query` with agent-style text.
    Agent,
    /// The same, returning the demo's masked column (`email`).
    AgentMasked,
    /// `interlock_query` with the analytic read, new literals each time.
    Analytic,
    /// `interlock_query` with the `$1` point query, ids in 1..=n.
    Param(u64),
    /// `tools/list`.
    ToolsList,
    /// `GET /healthz`.
    Health,
}

/// Governed calls on `conns` HTTP connections, each opened (one `/healthz`) before the clock
/// starts, like the direct baseline's.
async fn governed(base: &str, key: &str, how: Governed, conns: usize, secs: u64) -> Measured {
    let mut ready = Vec::new();
    for _ in 0..conns {
        let client = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(1)
            .build()
            .expect("client");
        client
            .get(format!("{base}/healthz"))
            .send()
            .await
            .expect("connect")
            .text()
            .await
            .expect("healthz");
        ready.push(client);
    }
    let cpu = cpu_start(None).await;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for (t, client) in ready.into_iter().enumerate() {
        let (base, key) = (base.to_string(), key.to_string());
        tasks.push(tokio::spawn(async move {
            let mut seed = 0xD1B5_4A32_D192_ED03u64 ^ (t as u64 + 1);
            let (mut lat, mut errors) = (Vec::new(), 0u64);
            while Instant::now() < deadline {
                let body = match how {
                    Governed::Agent => json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "interlock_query", "arguments": {"source_id": "shop", "sql": agent_sql(&mut seed)}}}),
                    Governed::Analytic => json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "interlock_query", "arguments": {"source_id": "shop", "sql": analytic_sql(&mut seed)}}}),
                    Governed::AgentMasked => json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "interlock_query", "arguments": {"source_id": "shop", "sql": agent_masked_sql(&mut seed)}}}),
                    Governed::Param(n) => json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                        "params": {"name": "interlock_query", "arguments": {"source_id": "shop", "sql": POINT, "params": [next(&mut seed, n)]}}}),
                    Governed::ToolsList => json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                    Governed::Health => json!(null),
                };
                let started = Instant::now();
                let res = if how == Governed::Health {
                    client.get(format!("{base}/healthz")).send().await
                } else {
                    client
                        .post(format!("{base}/mcp"))
                        .header("Content-Type", "application/json")
                        .header("Accept", "application/json, text/event-stream")
                        .header("MCP-Protocol-Version", "2025-11-25")
                        .bearer_auth(&key)
                        .json(&body)
                        .send()
                        .await
                };
                let ok = match res {
                    Ok(r) if r.status() == 200 => r
                        .text()
                        .await
                        .is_ok_and(|t| how == Governed::Health || (t.contains("\"result\"") && !t.contains("\"isError\":true"))),
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
    collect(tasks, started, cpu, None).await
}

/// Every task's latencies and errors; throughput over the time measured from `started`
/// until the last call ended (not the nominal duration).
async fn collect(
    tasks: Vec<tokio::task::JoinHandle<(Vec<f64>, u64)>>,
    started: Instant,
    cpu: CpuStart,
    direct: Option<&[u32]>,
) -> Measured {
    let (mut all, mut errors) = (Vec::new(), 0);
    for t in tasks {
        let (l, e) = t.await.expect("join");
        all.extend(l);
        errors += e;
    }
    let elapsed = started.elapsed();
    let cpu = cpu_since(cpu, direct, all.len() as u64 + errors).await;
    summarize(all, elapsed, errors, cpu)
}

/// `interlock_stage_seconds` sums and counts per stage, from the gateway's `/metrics`.
/// The gateway's `/metrics` text.
async fn metrics_text(base: &str, operator_key: &str) -> String {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .get(format!("{base}/metrics"))
        .bearer_auth(operator_key)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics body")
}

async fn stages(base: &str, operator_key: &str) -> BTreeMap<String, (f64, f64)> {
    let text = metrics_text(base, operator_key).await;
    // Each stage (`interlock_stage_seconds{stage="…"}`), and beside them the audit writer's
    // own commit time and batch size: the commit against the audit wait tells the flight
    // from the path to and from the writer.
    let mut out: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for line in text.lines() {
        let Some((key, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let (series, label) = key.split_once('{').unwrap_or((key, ""));
        let (series, sum) = match (series.strip_suffix("_sum"), series.strip_suffix("_count")) {
            (Some(s), _) => (s, true),
            (_, Some(s)) => (s, false),
            _ => continue,
        };
        let name = match series {
            "interlock_stage_seconds" => match label.split('"').nth(1) {
                Some(stage) => stage,
                None => continue,
            },
            "interlock_audit_commit_seconds" => "audit commit",
            "interlock_audit_step_seconds" => match label.split('"').nth(1) {
                Some("mailbox") => "audit to writer",
                Some("queued") => "audit queued",
                Some("seqs") => "audit seqs",
                Some("insert") => "audit insert",
                _ => continue,
            },
            "interlock_audit_batch_size" => "audit batch",
            _ => continue,
        };
        let entry = out.entry(name.to_string()).or_default();
        if sum {
            entry.0 = value;
        } else {
            entry.1 = value;
        }
    }
    out
}

/// Mean microseconds per stage between two scrapes, in pipeline order.
fn breakdown(
    before: &BTreeMap<String, (f64, f64)>,
    after: &BTreeMap<String, (f64, f64)>,
) -> String {
    let mean = |name: &str, scale: f64| {
        let (s1, c1) = after.get(name).copied().unwrap_or_default();
        let (s0, c0) = before.get(name).copied().unwrap_or_default();
        let n = c1 - c0;
        (n > 0.0).then(|| format!("{name} {:.0}", (s1 - s0) / n * scale))
    };
    interlock::stages::in_call_order()
        .filter_map(|s| mean(s, 1e6))
        .chain(mean("audit commit", 1e6))
        .chain(
            [
                "audit to writer",
                "audit queued",
                "audit seqs",
                "audit insert",
            ]
            .into_iter()
            .filter_map(|step| mean(step, 1e6)),
        )
        .chain(mean("audit batch", 1.0))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// What the audit append costs at its floor, pgbench's durable single-row insert of the
/// same record on one connection, beside what a governed call `g` cost the control
/// database. Its records (a chain of their own, unlinked) stay in this bench's log, which
/// nothing verifies.
async fn audit_floor(cluster: &Cluster, g: Measured) {
    let admin = cluster.connect(&control_db()).await.expect("control");
    setup::name_floor_chain(&admin).await;
    let secs = 3;
    let f = pgbench(cluster, Pgbench::AuditInsert, 1, secs).await;
    println!(
        "{:>38} pgbench's durable audit insert, 1 client: p50 {:.3} ms, control CPU {:.0} µs per insert; governed control CPU {:.0} µs per call ({:.2}×)",
        "floor:",
        f.p50_ms,
        f.cpu.source,
        g.cpu.control,
        g.cpu.control / f.cpu.source.max(1.0)
    );
}

/// Forgets what pg_stat_statements has counted so far (the extension made where needed).
async fn statements_reset(cluster: &Cluster) {
    let admin = cluster.connect("postgres").await.expect("admin");
    admin
        .batch_execute(
            "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()",
        )
        .await
        .expect("pg_stat_statements");
}

/// What each database ran per governed call since [`statements_reset`]: the statements
/// that took the most time, with their calls, time and WAL per governed call.
async fn statements_per_call(cluster: &Cluster, calls: f64) {
    let admin = cluster.connect("postgres").await.expect("admin");
    let rows = admin
        .query(
            "SELECT d.datname, s.calls, s.total_exec_time, s.wal_bytes::float8, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 110)
               FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
              ORDER BY s.total_exec_time DESC LIMIT 25",
            &[],
        )
        .await
        .expect("pg_stat_statements");
    println!(
        "{:<16} {:>10} {:>12} {:>12} statement",
        "database", "per call", "µs per call", "WAL B/call"
    );
    for r in rows {
        let (db, n, ms, wal, text): (String, i64, f64, f64, String) =
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
        println!(
            "{db:<16} {:>10.3} {:>12.1} {:>12.0} {text}",
            n as f64 / calls.max(1.0),
            ms * 1e3 / calls.max(1.0),
            wal / calls.max(1.0)
        );
    }
}

/// Private (anonymous) resident memory of a process, in MiB.
fn private_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("RssAnon:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .unwrap_or(0.0)
        / 1024.0
}

/// The gateway's source backends (application_name `interlock` on `shop`).
async fn backend_pids(cluster: &Cluster) -> Vec<u32> {
    let client = cluster.connect("postgres").await.expect("connect");
    client
        .query(
            "SELECT pid FROM pg_stat_activity WHERE datname = 'shop' AND application_name = 'interlock'",
            &[],
        )
        .await
        .expect("pg_stat_activity")
        .iter()
        .map(|r| r.get::<_, i32>(0) as u32)
        .collect()
}

async fn memory_mib(cluster: &Cluster) -> (f64, f64, usize) {
    let pids = backend_pids(cluster).await;
    let backends: f64 = pids.iter().map(|p| private_mib(*p)).sum();
    (private_mib(std::process::id()), backends, pids.len())
}

fn print_pair(label: &str, conns: usize, d: Measured, g: Measured, stages: &str) {
    println!(
        "{conns:<6} {:>22} {:>9.0} {:>7} {:>9.3} {:>9.3} {:>9} {:>7}",
        format!("{label} baseline"),
        d.rps,
        "1.00",
        d.p50_ms,
        d.p99_ms,
        "",
        d.errors
    );
    println!(
        "{conns:<6} {:>22} {:>9.0} {:>7.2} {:>9.3} {:>9.3} {:>9.3} {:>7}",
        format!("{label} governed"),
        g.rps,
        g.rps / d.rps,
        g.p50_ms,
        g.p99_ms,
        g.p50_ms - d.p50_ms,
        g.errors
    );
    // A baseline that touches no database (`/healthz`) has no source CPU to compare with.
    let ratio = |x: f64| times(x, d.cpu.source);
    println!(
        "{:<6} {:>22} µs per call: gateway {:.0} ({}) · source {:.0} ({}) · control {:.0} ({}); baseline's source {:.0}",
        "",
        "cpu",
        g.cpu.gateway,
        ratio(g.cpu.gateway),
        g.cpu.source,
        ratio(g.cpu.source),
        g.cpu.control,
        ratio(g.cpu.control),
        d.cpu.source
    );
    if !stages.is_empty() {
        println!("{:<6} {:>22} µs per call: {stages}", "", "stages");
    }
}

/// Turns cost admission on shop on (a `max_cost` rule far above any agent read's estimate)
/// or off (no cost rule).
/// The sum of a counter's series in the gateway's `/metrics`.
async fn metric(base: &str, key: &str, name: &str) -> f64 {
    metrics_text(base, key)
        .await
        .lines()
        .filter(|l| l.starts_with(name))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn cost_admission(state: &interlock::state::AppState, on: bool) {
    let rules = if on {
        "rules = [{ kind = \"max_cost\", value = 1000000000 }]"
    } else {
        "rules = []"
    };
    let text = format!("[[policies]]\nsource = \"shop\"\nname = \"bench-cost\"\n{rules}\n");
    interlock::control::policy_file::apply(
        &state.control,
        &interlock::control::policy_file::AccessFile::parse(&text).expect("file"),
    )
    .await
    .expect("apply");
    state.profiles.invalidate_all();
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Puts the demo's mask on `public.customers.email` back (the demo access file) or removes
/// it; the agent cell reads customers, so with it every read runs through the derived table
/// of masked values.
async fn demo_mask(state: &interlock::state::AppState, on: bool) {
    if on {
        interlock::control::policy_file::apply(
            &state.control,
            &interlock::control::policy_file::AccessFile::parse(interlock::demo::ACCESS_TOML)
                .expect("demo access"),
        )
        .await
        .expect("apply");
    } else {
        state
            .control
            .get()
            .await
            .expect("control")
            .execute(
                "DELETE FROM redaction_rules WHERE source_id = 'shop' AND table_name = 'customers'",
                &[],
            )
            .await
            .expect("remove the mask");
    }
    state.profiles.invalidate_all();
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Sets how the shop source carries the caller's identity.
async fn propagate(control: &interlock::control::ControlPool, how: Propagation) {
    let changes = interlock::control::sources::SourceChanges {
        identity_propagation: Some(how),
        ..Default::default()
    };
    interlock::control::sources::update_source(control, "shop", &changes)
        .await
        .expect("identity propagation");
}

fn main() {
    let secs = arg("--seconds", 5);
    let memory_secs = arg("--memory-seconds", 60);
    let workers = arg("--workers", 0); // HTTP workers; 0: one per core, as in production
    let profile_secs = arg("--profile-seconds", 0); // > 0: only the profiling window
    let cost_only = arg("--cost-only", 0) > 0; // only the agent cells, admission off and on
    let traces_only = arg("--traces-only", 0) > 0; // only the agent cells, tracing off and on
    let profile_traced = arg("--profile-traced", 0) > 0; // the profiling window traces every call
    let profile_conns = arg("--profile-conns", 32) as usize; // the profiling window's connections
                                                             // > 0: the cluster preloads pg_stat_statements, and the profiling window ends with what
                                                             // each database ran per governed call
    let profile_statements = arg("--profile-statements", 0) > 0;
    let masks_only = arg("--masks-only", 0) > 0; // only the agent cells, the demo mask on and off
    let analytic_only = arg("--analytic-only", 0) > 0; // only the agent and analytic cells
    let writer_per_worker = arg("--writer-per-worker", 1) > 0; // 0: one audit writer for all

    // > 0: PostgreSQL's group commit (`commit_delay` µs, `commit_siblings` 1): a commit
    // that finds another transaction open waits that long so their WAL flushes as one
    let commit_delay_us = arg("--commit-delay-us", 0);
    let mut server_settings = Vec::new();
    let mut set = |name: &str, value: String| server_settings.push((name.to_string(), value));
    if profile_statements {
        set("shared_preload_libraries", "pg_stat_statements".into());
    }
    if commit_delay_us > 0 {
        set("commit_delay", commit_delay_us.to_string());
        set("commit_siblings", "1".into());
    }
    let (_dir, cluster) = setup::durable_cluster_with("interlock-load-", server_settings);
    let cluster = Arc::new(cluster);
    let cl = cluster.clone();
    actix_rt::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_multi_thread().thread_name("load-gen").enable_all().build().expect("rt")
    })
        .block_on(async move {
            interlock::demo::prepare_databases(&cl).await.expect("databases");
            let mut settings = Settings::load_with_env(None, Vec::<(String, String)>::new()).expect("settings");
            interlock::demo::control_settings(&mut settings, &cl);
            settings.server.listen = "127.0.0.1:0".into();
            settings.server.workers = usize::try_from(workers).expect("workers");
            settings.audit.writer_per_worker = writer_per_worker;
            settings.log.level = "warn".into();
            settings.sources.refresh_interval_ms = 500;
            let control_db = settings.control.dbname.clone();
            let traced_settings = settings.clone();
            if profile_secs > 0 && profile_traced {
                settings.telemetry.otlp_endpoint = otlp_sink().await;
            }
            let gateway = interlock::Gateway::start(settings).await.expect("gateway");
            let admin = cl.connect("postgres").await.expect("admin");
            let _ = PROBE.set(Probe { admin, control_db });
            let keys = interlock::demo::seed(&gateway.state().control, &cl).await.expect("seed");
            // The demo's shop carries identities into PostgreSQL (its RLS demo); the cells
            // measure the default path, and the "as caller" cells that cost separately.
            propagate(&gateway.state().control, Propagation::None).await;
            gateway.state().sources.reload().await.expect("reload");
            gateway.state().sources.refresh_catalog("shop").await.expect("catalog");
            let base = format!("http://{}", gateway.addr());
            let control = gateway.state().control.clone();
            let gateway_state = gateway.state().clone();
            let _handle = gateway.spawn();
            let key = keys.agent_key.clone();
            let op = keys.operator_key.clone();
            // Warm up: catalog scan, pools, identity cache.
            governed(&base, &key, Governed::Param(1000), 4, 1).await;

            if profile_secs > 0 {
                // Only governed agent load (32 connections unless told), for a profiler
                // attached from outside (`perf record -a`, `perf sched record -a` while this
                // runs).
                interlock::control::sources::set_cache_ttl(&control, "shop", 0).await.expect("ttl");
                tokio::time::sleep(Duration::from_millis(1200)).await;
                if profile_statements {
                    statements_reset(&cl).await;
                }
                println!("profile window: {profile_secs} s of governed agent load at {profile_conns} connections");
                let before = stages(&base, &op).await;
                let g = governed(&base, &key, Governed::Agent, profile_conns, profile_secs).await;
                let after = stages(&base, &op).await;
                println!("{:.0} req/s; {}", g.rps, breakdown(&before, &after));
                if profile_statements {
                    statements_per_call(&cl, (g.rps * profile_secs as f64).round()).await;
                }
                return;
            }
            println!("InterLock load benchmark: {secs} s per cell; demo public.customers (1,000 rows); durable audit on");
            println!("{:<6} {:>22} {:>9} {:>7} {:>9} {:>9} {:>9} {:>7}", "conns", "cell", "req/s", "ratio", "p50 ms", "p99 ms", "+p50 ms", "errors");
            interlock::control::sources::set_cache_ttl(&control, "shop", 0).await.expect("ttl");
            tokio::time::sleep(Duration::from_millis(1200)).await;
            if masks_only {
                let mut baseline = BTreeMap::new();
                for conns in [1, 32] {
                    baseline.insert(conns, direct(&cl, Direct::Simple, conns, secs).await);
                }
                for round in 1..=2 {
                    for on in [true, false] {
                        demo_mask(&gateway_state, on).await;
                        for (what, how) in [("id, name, country", Governed::Agent), ("id, name, email", Governed::AgentMasked)] {
                            for conns in [1, 32] {
                                let before = stages(&base, &op).await;
                                let g = governed(&base, &key, how, conns, secs).await;
                                let after = stages(&base, &op).await;
                                let cell = format!("{what}, mask {} #{round}", if on { "on" } else { "off" });
                                print_pair(&cell, conns, baseline[&conns], g, &breakdown(&before, &after));
                            }
                        }
                    }
                }
                demo_mask(&gateway_state, true).await;
                return;
            }
            let max_rows = source_max_rows(&cl).await;
            let mut simple = BTreeMap::new();
            for conns in LEVELS {
                if (cost_only || traces_only) && conns == 8 {
                    continue;
                }
                let p = pgbench(&cl, Pgbench::AgentSimple, conns, secs).await;
                let d = direct(&cl, Direct::Simple, conns, secs).await;
                simple.insert(conns, d);
                let before = stages(&base, &op).await;
                let g = governed(&base, &key, Governed::Agent, conns, secs).await;
                let after = stages(&base, &op).await;
                print_pair("agent", conns, d, g, &breakdown(&before, &after));
                print_pgbench("agent", conns, p, g);
                let as_sent = |pace| Direct::AsSent { max_rows, pace };
                let sent = direct(&cl, as_sent(None), conns, secs).await;
                let paced = direct(&cl, as_sent(Some(g.rps)), conns, secs).await;
                print_as_sent(p, sent, paced, g);
                if conns == 1 {
                    audit_floor(&cl, g).await;
                }
            }
            // The analytic read: what the gateway adds to a statement that takes the database
            // a while, with new interval and numeric literals every time.
            for conns in [1, 8] {
                let p = pgbench(&cl, Pgbench::AnalyticSimple, conns, secs).await;
                let d = direct(&cl, Direct::Analytic, conns, secs).await;
                let before = stages(&base, &op).await;
                let g = governed(&base, &key, Governed::Analytic, conns, secs).await;
                let after = stages(&base, &op).await;
                print_pair("analytic", conns, d, g, &breakdown(&before, &after));
                print_pgbench("analytic", conns, p, g);
            }
            if analytic_only {
                return;
            }
            // The same agent reads through four more gateways of the fleet, started alike:
            // tracing off; tracing every call, or one in a hundred, to an OTLP sink that takes
            // every export (its work runs on the load generator); and every call to a
            // collector that accepts and never answers (exports wait out their timeout, the
            // bounded queue fills, spans, not calls, are dropped). Two rounds, interleaved, so
            // the order of the cells does not pass for a cost.
            let sink = otlp_sink().await;
            let hung = otlp_hole().await;
            let mut traced = Vec::new();
            for (label, endpoint, ratio) in [
                ("tracing off", "", 1.0),
                ("traced 100 %", sink.as_str(), 1.0),
                ("traced 1 %", sink.as_str(), 0.01),
                ("traced, hung collector", hung.as_str(), 1.0),
            ] {
                let mut s = traced_settings.clone();
                s.telemetry.otlp_endpoint = endpoint.to_string();
                s.telemetry.sampling_ratio = ratio;
                let gw = interlock::Gateway::start(s).await.expect("traced gateway");
                let gw_base = format!("http://{}", gw.addr());
                let _ = gw.spawn();
                governed(&gw_base, &key, Governed::Agent, 4, 1).await;
                traced.push((label, gw_base));
            }
            for round in 1..=2 {
                for (label, gw_base) in &traced {
                    // Span counters are the process's, so each cell reports what it added.
                    let spans = || async {
                        (
                            metric(gw_base, &op, "interlock_trace_spans_exported_total").await,
                            metric(gw_base, &op, "interlock_trace_spans_dropped_total").await,
                        )
                    };
                    let (exported0, dropped0) = spans().await;
                    for conns in [1, 32] {
                        let before = stages(gw_base, &op).await;
                        let g = governed(gw_base, &key, Governed::Agent, conns, secs).await;
                        let after = stages(gw_base, &op).await;
                        let cell = format!("{label} #{round}");
                        print_pair(&cell, conns, simple[&conns], g, &breakdown(&before, &after));
                    }
                    let (exported1, dropped1) = spans().await;
                    println!(
                        "       {label} #{round}: {:.0} spans exported, {:.0} dropped",
                        exported1 - exported0,
                        dropped1 - dropped0
                    );
                }
            }
            if traces_only {
                return;
            }
            // The same agent reads with cost admission on (a max_cost rule every one of them
            // passes: each is planned first, as the caller, then run), against the same
            // baseline; the difference to the cell above is what admission adds.
            cost_admission(&gateway_state, true).await;
            for conns in [1, 32] {
                let before = stages(&base, &op).await;
                let g = governed(&base, &key, Governed::Agent, conns, secs).await;
                let after = stages(&base, &op).await;
                print_pair("agent, cost admitted", conns, simple[&conns], g, &breakdown(&before, &after));
            }
            cost_admission(&gateway_state, false).await;
            if cost_only {
                return;
            }
            let mut prepared = BTreeMap::new();
            let mut pgbench_prepared = BTreeMap::new();
            for conns in [1, 32] {
                let p = pgbench(&cl, Pgbench::PointPrepared, conns, secs).await;
                pgbench_prepared.insert(conns, p);
                let d = direct(&cl, Direct::Prepared, conns, secs).await;
                prepared.insert(conns, d);
                let before = stages(&base, &op).await;
                let g = governed(&base, &key, Governed::Param(1000), conns, secs).await;
                let after = stages(&base, &op).await;
                print_pair("param", conns, d, g, &breakdown(&before, &after));
                print_pgbench("param", conns, p, g);
            }
            // The same reads carrying the caller's identity (identity_propagation = "settings":
            // set on the connection's session when its caller changes; with one agent, once
            // per connection).
            propagate(&control, Propagation::Settings).await;
            tokio::time::sleep(Duration::from_millis(1200)).await;
            for conns in [1, 32] {
                let before = stages(&base, &op).await;
                let g = governed(&base, &key, Governed::Param(1000), conns, secs).await;
                let after = stages(&base, &op).await;
                print_pair("param as caller", conns, prepared[&conns], g, &breakdown(&before, &after));
            }
            propagate(&control, Propagation::None).await;
            interlock::control::sources::set_cache_ttl(&control, "shop", 600_000).await.expect("ttl");
            tokio::time::sleep(Duration::from_millis(1200)).await;
            governed(&base, &key, Governed::Param(100), 4, 2).await; // warm the cache
            for conns in [1, 32] {
                let before = stages(&base, &op).await;
                let g = governed(&base, &key, Governed::Param(100), conns, secs).await;
                let after = stages(&base, &op).await;
                print_pair("cache hit", conns, prepared[&conns], g, &breakdown(&before, &after));
                print_pgbench("cache hit", conns, pgbench_prepared[&conns], g);
            }
            let h = governed(&base, &key, Governed::Health, 1, secs).await;
            let before = stages(&base, &op).await;
            let t = governed(&base, &key, Governed::ToolsList, 1, secs).await;
            let after = stages(&base, &op).await;
            print_pair("tools/list vs healthz", 1, h, t, &breakdown(&before, &after));

            interlock::control::sources::set_cache_ttl(&control, "shop", 0).await.expect("ttl");
            tokio::time::sleep(Duration::from_millis(1200)).await;
            let first = memory_secs.min(20);
            let warm = governed(&base, &key, Governed::Agent, 32, first).await;
            let (g0, b0, n0) = memory_mib(&cl).await;
            let rest = governed(&base, &key, Governed::Agent, 32, memory_secs - first).await;
            let (g1, b1, n1) = memory_mib(&cl).await;
            println!(
                "memory: {memory_secs} s of agent load at 32 connections ({:.0} then {:.0} req/s): \
                 gateway {g0:.1} → {g1:.1} MiB, {n0}→{n1} source backends {b0:.1} → {b1:.1} MiB; \
                 growth after the first {first} s: {:+.1} MiB in total",
                warm.rps,
                rest.rps,
                (g1 - g0) + (b1 - b0)
            );
        });
    drop(cluster);
}
