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
        server_settings: Vec::new(),
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
    let _issuer = demo_issuer(&mut settings, cluster.base_dir(), args.port)?;
    checkpoint_key(&mut settings, cluster.base_dir())?;

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
            "oauth": {"issuer": settings.oauth.issuer, "resource": settings.oauth.resource},
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

/// Where the demo issuer's directory is, and what `dev token` needs to know about it.
const ISSUER_DIR: &str = "issuer";
const ISSUER_FILE: &str = "issuer.json";

/// Starts the demo's token issuer (its metadata and keys on a free loopback port) and turns
/// `[oauth]` on for it, unless the configuration already names an identity provider.
fn demo_issuer(
    settings: &mut Settings,
    dir: &Path,
    port: u16,
) -> anyhow::Result<Option<actix_web::dev::ServerHandle>> {
    if settings.oauth.enabled {
        return Ok(None);
    }
    let issuer = crate::oauth::issuer::DemoIssuer::open(&dir.join(ISSUER_DIR))?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let base = format!("http://{}", listener.local_addr()?);
    let server = crate::oauth::issuer::serve(listener, &issuer)?;
    let handle = server.handle();
    actix_rt::spawn(server);
    let o = &mut settings.oauth;
    o.enabled = true;
    o.issuer.clone_from(&base);
    o.resource = format!("http://127.0.0.1:{port}/mcp");
    o.auto_provision = true;
    o.roles_claim = "groups".into();
    o.group_roles = vec![crate::oauth::settings::GroupRole {
        group: "analysts".into(),
        source: demo::SHOP_DB.into(),
        role: "analyst".into(),
    }];
    let facts = json!({"issuer": base, "resource": o.resource, "tools_scope": o.tools_scope});
    std::fs::write(
        dir.join(ISSUER_DIR).join(ISSUER_FILE),
        serde_json::to_vec_pretty(&facts)?,
    )?;
    Ok(Some(handle))
}

/// `interlock dev token`: a signed access token from the demo issuer in `data_dir`.
pub fn token(
    data_dir: &Path,
    identity: &str,
    scopes: Vec<String>,
    groups: Vec<String>,
    ttl_secs: i64,
) -> anyhow::Result<()> {
    let dir = data_dir.join(ISSUER_DIR);
    let facts: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(ISSUER_FILE)).with_context(|| {
            format!(
                "no demo issuer in {} (run `interlock dev` first)",
                dir.display()
            )
        })?)?;
    let issuer = crate::oauth::issuer::DemoIssuer::open(&dir)?;
    let text = |k: &str| facts[k].as_str().unwrap_or_default().to_string();
    let scopes = if scopes.is_empty() {
        vec![text("tools_scope")]
    } else {
        scopes
    };
    let groups = if groups.is_empty() {
        vec!["analysts".to_string()]
    } else {
        groups
    };
    let token = issuer.mint(
        &text("issuer"),
        &text("resource"),
        identity,
        &scopes,
        &groups,
        ttl_secs,
    )?;
    println!("{token}");
    Ok(())
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
    let quoted = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
    let text = format!(
        "# Written by `interlock dev`: points CLI commands at the demo's control database.\n\
         [control]\nhost = \"{}\"\nport = {}\ndbname = \"{}\"\nuser = \"{}\"\npassword_file = \"{}\"\n\
         [audit]\ncheckpoint_key_file = \"{}\"\n",
        c.host,
        c.port,
        c.dbname,
        c.user,
        quoted(&c.password_file),
        quoted(&settings.audit.checkpoint_key_file),
    );
    write_private(path, &text)
}

/// The demo's audit checkpoint key: generated into the data directory once, then reused,
/// so checkpoints of earlier runs keep verifying. An operator's own key file wins.
fn checkpoint_key(settings: &mut Settings, dir: &Path) -> anyhow::Result<()> {
    if !settings.audit.checkpoint_key_file.is_empty() {
        return Ok(());
    }
    let path = dir.join("audit-checkpoint.key");
    if !path.exists() {
        let skey = crate::ledger::CheckpointKey::generate("interlock.demo/audit")?;
        write_private(&path, &format!("{skey}\n"))?;
    }
    settings.audit.checkpoint_key_file = path.display().to_string();
    Ok(())
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

Sign in with the demo's identity provider instead of a key:
  interlock dev token --identity demo-agent      (prints an access token)
  curl -s http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp

Manage it from another terminal:
  interlock --config {config} keys list
  interlock --config {config} sources list
  interlock --config {config} audit checkpoint      (sign the audit log's state now)
  curl -s http://127.0.0.1:{port}/audit/checkpoint-key   (the key auditors verify it with)

Stop with Ctrl-C.
"#,
        agent = keys.agent_key,
        approver = keys.approver_key,
        operator = keys.operator_key,
        config = config.display(),
    );
}
