//! `interlock dev`: the one-command demo.
//!
//! Starts (or reuses) a private PostgreSQL cluster under `--data-dir`, prepares the control
//! and `shop` databases, starts the gateway on 127.0.0.1:`--port`, seeds the demo through
//! the operator code paths and prints a quick start. SIGINT/SIGTERM stop the gateway
//! (actix handles the signals) and then the cluster.

use std::path::Path;

use anyhow::Context;
use serde_json::json;

use super::DevArgs;
use crate::config::Settings;
use crate::demo;
use crate::pgcluster::{Cluster, ClusterOptions};

pub async fn run(mut settings: Settings, args: DevArgs) -> anyhow::Result<()> {
    let options = ClusterOptions {
        base_dir: args.data_dir.clone(),
        port: args.pg_port,
        fast: false,
    };
    let cluster = tokio::task::spawn_blocking(move || Cluster::start(&options))
        .await
        .context("starting PostgreSQL")??;
    tracing::info!(port = cluster.port(), dir = %cluster.base_dir().display(), "private PostgreSQL running");

    // From here on, `cluster` is dropped (and PostgreSQL stopped) on every exit path.
    demo::prepare_databases(&cluster).await?;
    demo::control_settings(&mut settings, &cluster);
    settings.server.listen = format!("127.0.0.1:{}", args.port);
    settings.control.migrate_on_start = true;
    // The demo's webhooks may go to receivers on this machine.
    settings.webhooks.allow_private = true;
    let _redis = shared_limits(&mut settings, cluster.base_dir())?;

    let gateway = crate::Gateway::start(settings.clone()).await?;
    let keys = demo::seed(&gateway.state().control, &cluster).await?;
    // Make the seeded sources and the shop catalog live before announcing readiness.
    let sources = &gateway.state().sources;
    sources.reload().await?;
    if let Err(e) = sources.refresh_catalog(demo::SHOP_DB).await {
        tracing::warn!(error = %e, "the demo catalog could not be scanned yet");
    }
    let endpoint = format!("http://{}/mcp", gateway.addr());
    let mut endpoints = vec![endpoint.clone()];
    for i in 1..args.replicas {
        let mut replica = settings.clone();
        replica.server.listen = format!("127.0.0.1:{}", args.port.saturating_add(i));
        let started = crate::Gateway::start(replica)
            .await
            .with_context(|| format!("starting replica {}", i + 1))?;
        endpoints.push(format!("http://{}/mcp", started.addr()));
        // Serves until the signal that stops the first gateway stops it too.
        started.spawn();
    }
    let config_path = cluster.base_dir().join("interlock.toml");
    write_cli_config(&config_path, &settings)?;

    if let Some(path) = &args.credentials_file {
        let creds = json!({
            "endpoint": endpoint,
            "agent_key": keys.agent_key,
            "approver_key": keys.approver_key,
            "operator_key": keys.operator_key,
            "sources": {"shop": {"dsn": cluster.admin_dsn(demo::SHOP_DB)}},
            "replicas": endpoints,
        });
        write_private(path, &serde_json::to_string_pretty(&creds)?)?;
    }
    print_quick_start(&endpoint, &keys, &config_path, gateway.addr().port());
    if endpoints.len() > 1 {
        println!(
            "A fleet of {} replicas on one control database:",
            endpoints.len()
        );
        for e in &endpoints {
            println!("  {e}");
        }
        println!("  (GET /admin/replicas with the operator key lists them)\n");
    }

    let served = gateway.wait().await;
    tracing::info!("gateway stopped; stopping PostgreSQL");
    let mut cluster = cluster;
    tokio::task::spawn_blocking(move || cluster.stop())
        .await
        .context("stopping PostgreSQL")??;
    served.context("serving")
}

/// A private `redis-server` for the demo's shared rate limits, stopped when dropped.
struct PrivateRedis(std::process::Child);

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// With the redis backend chosen and no `redis_url`, starts a private `redis-server` (when
/// the binary exists) and points the settings at it.
fn shared_limits(settings: &mut Settings, dir: &Path) -> anyhow::Result<Option<PrivateRedis>> {
    use crate::config::RateLimitBackend;
    let limits = &mut settings.rate_limit;
    if limits.backend != RateLimitBackend::Redis || !limits.redis_url.is_empty() {
        return Ok(None);
    }
    let port = crate::pgcluster::free_port()?;
    let child = std::process::Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no", "--dir"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .spawn()
        .context("rate_limit.backend is redis without a redis_url, and redis-server could not be started (apt-get install redis-server, or set rate_limit.redis_url)")?;
    limits.redis_url = format!("redis://127.0.0.1:{port}");
    println!(
        "Shared rate limits: a private redis-server at {}",
        limits.redis_url
    );
    Ok(Some(PrivateRedis(child)))
}

/// A config file for running CLI commands against the demo's control database.
fn write_cli_config(path: &Path, settings: &Settings) -> anyhow::Result<()> {
    let c = &settings.control;
    let text = format!(
        "# Written by `interlock dev`: points CLI commands at the demo's control database.\n\
         [control]\nhost = \"{}\"\nport = {}\ndbname = \"{}\"\nuser = \"{}\"\npassword_file = \"{}\"\n",
        c.host,
        c.port,
        c.dbname,
        c.user,
        c.password_file.replace('\\', "\\\\").replace('"', "\\\"")
    );
    write_private(path, &text)
}

fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    crate::secrets::write_private(path, contents)
        .with_context(|| format!("writing {}", path.display()))
}

fn print_quick_start(endpoint: &str, keys: &demo::DemoKeys, config: &Path, port: u16) {
    println!(
        r#"
InterLock demo is running.

  MCP endpoint    {endpoint}
  Health          http://127.0.0.1:{port}/healthz   Readiness: http://127.0.0.1:{port}/readyz

  demo-agent      {agent}
  demo-approver   {approver}
  demo-operator   {operator}
  (new keys are minted on every start; earlier demo keys are revoked)

Try it:
  curl -s http://127.0.0.1:{port}/readyz

Manage it from another terminal:
  interlock --config {config} keys list
  interlock --config {config} sources list

Stop with Ctrl-C.
"#,
        agent = keys.agent_key,
        approver = keys.approver_key,
        operator = keys.operator_key,
        config = config.display(),
    );
}
