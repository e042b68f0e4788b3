//! The `interlock` command line.

mod admin;
mod dev;
mod ledger;
mod output;
mod policy_lab;
mod remote;
mod retention;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{LogFormat, Settings};
use crate::control::identities::{IdentityKind, RateLimit};
use crate::control::sources::TlsMode;

#[derive(Debug, Parser)]
#[command(
    name = "interlock",
    version,
    about = "InterLock: a governed MCP gateway between AI agents and company data",
    long_about = "InterLock serves MCP at POST /mcp and governs every call: API-key identity, \
                  per-source roles, policies, SQL safety, approvals for writes, redaction and a \
                  tamper-evident audit log.\n\nStart with `interlock dev` for a local demo."
)]
pub struct Cli {
    /// Configuration file layered over the built-in defaults (see config/default.toml).
    #[arg(long, global = true, env = "INTERLOCK_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Log format on stderr: text or json (overrides log.format).
    #[arg(long, global = true, value_name = "FORMAT", value_parser = parse_log_format)]
    pub log_format: Option<LogFormat>,

    #[command(subcommand)]
    pub command: Command,
}

fn parse_log_format(s: &str) -> Result<LogFormat, String> {
    match s {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        other => Err(format!("{other:?} is not a log format (text or json)")),
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the gateway with the configured control database.
    Serve,
    /// A tools-only MCP client: server-info, tools list, tools call (key in INTERLOCK_API_KEY).
    Client(crate::client::ClientArgs),
    /// Serve MCP over stdin/stdout for a host that launches InterLock as a child process.
    /// The API key comes from the INTERLOCK_API_KEY environment variable.
    Stdio,
    /// Run a local demo: private PostgreSQL, demo source `shop`, demo keys, gateway.
    Dev(DevArgs),
    /// Apply pending control-database migrations and exit.
    Migrate,
    /// Create, list and revoke API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Register and manage sources.
    #[command(subcommand)]
    Sources(SourcesCommand),
    /// Apply access files (identities, roles, grants, approvers, policies, redactions).
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Inspect the tamper-evident audit log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Grant and revoke source roles.
    #[command(subcommand)]
    Grants(GrantsCommand),
    /// Decide queued writes through a running gateway's admin API (approver key).
    Approvals {
        #[command(flatten)]
        remote: RemoteArgs,
        #[command(subcommand)]
        command: ApprovalsCommand,
    },
}

/// Where a running gateway is; the key comes from INTERLOCK_API_KEY.
#[derive(Debug, Clone, Args)]
pub struct RemoteArgs {
    /// Base URL of the gateway.
    #[arg(
        long,
        global = true,
        env = "INTERLOCK_ENDPOINT",
        default_value = "http://127.0.0.1:8080"
    )]
    pub endpoint: String,
}

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// List approvals (default: pending).
    List {
        /// pending, approved, executing, executed, failed, rejected, expired, outcome_unknown, withdrawn
        #[arg(long)]
        state: Option<String>,
        #[arg(long)]
        source: Option<String>,
    },
    /// Show one approval with its statement (control characters escaped) and decisions.
    Show { id: String },
    /// Approve; the write runs once enough distinct approvers have approved.
    Approve {
        id: String,
        #[arg(long, default_value = "")]
        reason: String,
        /// The most rows the write may affect when it runs (it is rolled back and fails
        /// beyond that); by default the previewed row count.
        #[arg(long)]
        max_rows: Option<u64>,
    },
    /// Compute the effect preview of a pending approval again.
    Preview { id: String },
    /// Reject with a reason; the write never runs.
    Reject {
        id: String,
        #[arg(long)]
        reason: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum GrantsCommand {
    /// Grant a source role to an identity.
    Add {
        identity: String,
        source: String,
        role: String,
    },
    /// Revoke a source role from an identity.
    Remove {
        identity: String,
        source: String,
        role: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Recompute the hash chain of the live log; exits non-zero at the first altered,
    /// missing or reordered record. With --archive, check the archived segments too and that
    /// the live log continues them; with --witness, that the log still has every root a
    /// witness file kept. With --offline, check an export or an archive directory
    /// with no database: the chain, and every checkpoint's signature, timestamp and root
    /// recomputed from the records.
    Verify {
        #[arg(long, value_name = "DIR", requires = "key")]
        offline: Option<PathBuf>,
        /// The directory of archived segments (`interlock audit archive`).
        #[arg(long, value_name = "DIR")]
        archive: Option<PathBuf>,
        /// A witness file (`audit.witness_file`): every checkpoint in it must be signed by
        /// the key and be a root of the log's tree as it is now.
        #[arg(long, value_name = "FILE", conflicts_with = "offline")]
        witness: Option<PathBuf>,
        /// The log's verifier key, or @FILE (with --offline; with --archive it defaults to
        /// the configured checkpoint key's).
        #[arg(long)]
        key: Option<String>,
    },
    /// Archive closed partitions of the audit log: each is written to DIR as a segment file
    /// carrying the signed checkpoint that covers it, read back and verified, and only then
    /// dropped from the control database. Prints what was archived.
    Archive {
        /// Where the segments go (default: audit.archive_dir).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Only partitions whose last record is older than this many days (default:
        /// audit.retain_days; 0: every closed partition).
        #[arg(long, value_name = "DAYS")]
        older_than_days: Option<u64>,
    },
    /// List the audit log's partitions, live and archived.
    Partitions,
    /// Generate a checkpoint signing key: writes the secret signer key to FILE (mode 0600)
    /// and prints the verifier key auditors check checkpoints with.
    Keygen {
        /// The key's name, also the log's origin line (e.g. `interlock.example.com/audit`).
        #[arg(long)]
        name: String,
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Extend the Merkle tree over every committed record and sign a checkpoint of it now
    /// (with `audit.checkpoint_key_file`); prints the signed note.
    Checkpoint,
    /// Print a proof bundle: with --seq, the record and its inclusion proof against the
    /// first checkpoint that covers it (or the one of --tree-size records); with --from and
    /// --to, the consistency proof between the checkpoints of those sizes.
    Prove {
        #[arg(long, conflicts_with_all = ["from", "to", "request_id", "approval_id"])]
        seq: Option<i64>,
        /// The record of this request id (instead of --seq).
        #[arg(long, conflicts_with_all = ["from", "to", "approval_id"])]
        request_id: Option<String>,
        /// The record of this approval (instead of --seq); an approval with several records
        /// (queued, decided, executed) lists their seqs to prove one by one.
        #[arg(long, conflicts_with_all = ["from", "to"])]
        approval_id: Option<uuid::Uuid>,
        #[arg(long)]
        tree_size: Option<u64>,
        #[arg(long, requires = "to")]
        from: Option<u64>,
        #[arg(long, requires = "from")]
        to: Option<u64>,
    },
    /// Export the whole log to DIR for outside checks: `records.jsonl` (every record with its
    /// chain hashes), `checkpoint-<size>.note` (each signed checkpoint) and, when timestamped,
    /// `checkpoint-<size>.tsr` (the RFC 3161 response: `openssl ts -verify -data
    /// checkpoint-<size>.note -in checkpoint-<size>.tsr -CAfile …`), `manifest.json`.
    Export {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Check a proof bundle offline, with the verifier key alone: no database, no
    /// configuration. Exits non-zero and names the failed check.
    VerifyProof {
        /// The bundle (JSON) `interlock audit prove` printed.
        file: PathBuf,
        /// The log's verifier key (`<name>+<id>+<key>`), or @FILE to read it from a file.
        #[arg(long)]
        key: String,
    },
}

#[derive(Debug, Args)]
pub struct DevArgs {
    /// Directory for the private PostgreSQL cluster and demo secrets (reused across runs);
    /// accepted before or after `token`.
    #[arg(
        long,
        global = true,
        default_value = ".interlock/dev",
        value_name = "DIR"
    )]
    pub data_dir: PathBuf,
    /// Port of the gateway on 127.0.0.1.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Port of the private PostgreSQL on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub pg_port: u16,
    /// Write endpoint, demo keys and the demo source DSN to this JSON file (mode 0600).
    #[arg(long, value_name = "PATH")]
    pub credentials_file: Option<PathBuf>,
    /// Gateways to run over the one cluster, on consecutive ports from `--port` (a fleet:
    /// shared caches invalidation, forced circuits, events; with
    /// `INTERLOCK__RATE_LIMIT__BACKEND=redis` and no `redis_url`, a private `redis-server`
    /// is started for shared rate limits when the binary exists).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=16))]
    pub replicas: u16,
    #[command(subcommand)]
    pub action: Option<DevAction>,
}

#[derive(Debug, Subcommand)]
pub enum DevAction {
    /// Print an access token from the demo's token issuer (the demo must have run once in
    /// this --data-dir): `Authorization: Bearer <token>` works like an API key.
    Token {
        /// The identity the token names (its `sub`); unknown ones are provisioned as agents.
        #[arg(long, default_value = "demo-agent")]
        identity: String,
        /// Scopes (repeatable; default: the tools scope).
        #[arg(long = "scope")]
        scopes: Vec<String>,
        /// Groups (repeatable; default: analysts, which the demo maps to shop's analyst role).
        #[arg(long = "group")]
        groups: Vec<String>,
        /// Seconds the token is valid.
        #[arg(long, default_value_t = 3600)]
        ttl_secs: i64,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Mint a key (shown once). Creates the identity when it does not exist.
    Create {
        /// Identity name, e.g. billing-agent.
        identity: String,
        /// What the identity is: agent, approver or operator.
        #[arg(long, default_value = "agent", value_parser = |s: &str| s.parse::<IdentityKind>())]
        kind: IdentityKind,
        /// Sustained rate limit such as 50/s, 3000/m (default: rate_limit in config).
        #[arg(long, value_parser = |s: &str| s.parse::<RateLimit>())]
        rate: Option<RateLimit>,
        /// Burst size for the rate limit (default: one second's worth).
        #[arg(long, requires = "rate")]
        burst: Option<u32>,
        /// Free-text label shown in listings.
        #[arg(long, default_value = "")]
        label: String,
    },
    /// List keys by prefix (secrets are never shown again).
    List {
        /// Only this identity's keys.
        #[arg(long)]
        identity: Option<String>,
    },
    /// Revoke a key by its prefix; it stops working within identity.cache_ttl_ms.
    Revoke {
        /// The prefix shown by `keys list`, e.g. ilk_AbCdEfGh.
        prefix: String,
    },
    /// Refuse every OAuth access token of an identity issued until now (its keys are
    /// untouched); tokens issued later work.
    RevokeTokens {
        /// The identity, e.g. night-agent.
        identity: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum SourcesCommand {
    /// Register a PostgreSQL source. Passwords are given by reference, never inline.
    Add(Box<SourceAddArgs>),
    /// List registered sources.
    List,
    /// Enable a source.
    Enable { id: String },
    /// Disable a source: governed calls to it are refused as unavailable.
    Disable { id: String },
    /// Connect to a source with its read login and report the server and latency.
    Test { id: String },
    /// How a source carries the caller's identity into PostgreSQL (for its row-level
    /// security): the propagation mode and, for `role`, the identity-to-role mapping
    /// (which replaces the current one when given).
    Identity {
        id: String,
        /// none, settings or role.
        #[arg(long)]
        propagation: Option<crate::control::sources::Propagation>,
        /// IDENTITY=ROLE (repeatable): the PostgreSQL role an identity runs as.
        #[arg(long = "map", value_parser = parse_identity_role)]
        map: Vec<(String, String)>,
    },
    /// Circuit state, counts and latency per source, from a running gateway (operator key).
    Status {
        #[command(flatten)]
        remote: RemoteArgs,
    },
}

#[derive(Debug, Args)]
pub struct SourceAddArgs {
    /// Source id agents use, e.g. shop (lowercase letters, digits, - and _).
    pub id: String,
    #[arg(long)]
    pub host: String,
    #[arg(long, default_value_t = 5432)]
    pub port: u16,
    #[arg(long)]
    pub dbname: String,
    /// Database login of the read pool (grant it SELECT only).
    #[arg(long)]
    pub user: String,
    /// Environment variable holding the read login's password.
    #[arg(long, conflicts_with = "password_file")]
    pub password_env: Option<String>,
    /// File holding the read login's password.
    #[arg(long)]
    pub password_file: Option<String>,
    /// Database login that executes approved writes (default: the read login).
    #[arg(long)]
    pub write_user: Option<String>,
    #[arg(long, conflicts_with = "write_password_file", requires = "write_user")]
    pub write_password_env: Option<String>,
    #[arg(long, requires = "write_user")]
    pub write_password_file: Option<String>,
    /// TLS to the source.
    #[arg(long, value_enum, default_value_t = TlsMode::Disable)]
    pub tls: TlsMode,
    /// CA certificate file (PEM) for --tls verify-full.
    #[arg(long)]
    pub tls_ca_file: Option<String>,
    /// Schemas for unqualified names, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "public")]
    pub search_path: Vec<String>,
    /// Server-side statement timeout in milliseconds.
    #[arg(long)]
    pub statement_timeout_ms: Option<u32>,
    /// Most rows a read returns.
    #[arg(long)]
    pub max_rows: Option<u32>,
    /// Result-cache TTL in milliseconds (0: no caching).
    #[arg(long)]
    pub cache_ttl_ms: Option<u32>,
    /// Approvals needed before a write runs (1 to 5).
    #[arg(long)]
    pub approvals_required: Option<u32>,
    /// How a queued write is previewed for approvers: explain (default), dry_run (executed
    /// and rolled back) or off.
    #[arg(long, value_parser = |s: &str| crate::control::sources::PreviewMode::parse(s).map_err(|e| e.to_string()))]
    pub approval_preview: Option<crate::control::sources::PreviewMode>,
    /// Carry the caller's identity into the source for its row-level security: none
    /// (default), settings (`interlock.identity`, `interlock.roles`) or role (the settings
    /// and `SET LOCAL ROLE` to the role mapped with --identity-role).
    #[arg(long)]
    pub identity_propagation: Option<crate::control::sources::Propagation>,
    /// With `--identity-propagation role`: the PostgreSQL role an identity runs as, as
    /// IDENTITY=ROLE (repeatable). Identities without one are refused on this source.
    #[arg(long = "identity-role", value_parser = parse_identity_role)]
    pub identity_roles: Vec<(String, String)>,
    #[arg(long, default_value = "")]
    pub description: String,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Apply an access file atomically (see src/control/policy_file.rs for the format).
    Apply { file: PathBuf },
    /// Replay recorded calls under an access file laid over the live policy and report what
    /// would change, without applying it (a running gateway's admin API; operator key).
    Simulate(SimulateArgs),
    /// Explain how one call would be decided: every grant, rule and mask that applies and
    /// what decided it (a running gateway's admin API; operator key).
    Explain(ExplainArgs),
}

/// `interlock policy simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The candidate access file (what `policy apply` takes).
    pub file: PathBuf,
    /// Records since: an RFC 3339 instant or a span back from now (90s, 30m, 12h, 7d).
    #[arg(long)]
    pub since: Option<String>,
    /// Only calls to this source.
    #[arg(long)]
    pub source: Option<String>,
    /// Only calls of this identity.
    #[arg(long)]
    pub identity: Option<String>,
    /// Most records to replay.
    #[arg(long, default_value_t = 100_000)]
    pub limit: u64,
    /// Examples shown per kind of change.
    #[arg(long, default_value_t = 5)]
    pub examples: usize,
    /// Print the whole report as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `interlock policy explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The identity that would call.
    #[arg(long)]
    pub identity: String,
    /// The source it would call.
    #[arg(long)]
    pub source: String,
    /// The statement it would send.
    #[arg(long)]
    pub sql: String,
    /// How many $n parameters the call binds.
    #[arg(long, default_value_t = 0)]
    pub params: usize,
    /// The rows the call would ask for.
    #[arg(long)]
    pub max_rows: Option<u64>,
    /// A token group of the caller (repeatable; implies an OAuth caller).
    #[arg(long = "group")]
    pub groups: Vec<String>,
    /// A token claim of the caller as NAME=JSON or NAME=text (repeatable; implies OAuth).
    #[arg(long = "claim", value_parser = parse_claim)]
    pub claims: Vec<(String, serde_json::Value)>,
    /// When the call is made (RFC 3339; default now).
    #[arg(long)]
    pub at: Option<chrono::DateTime<chrono::Utc>>,
    /// Explain under this access file laid over the live policy.
    #[arg(long)]
    pub file: Option<PathBuf>,
    #[command(flatten)]
    pub remote: RemoteArgs,
}

/// `NAME=VALUE` of `--claim`: VALUE as JSON when it parses, else as a string.
fn parse_claim(s: &str) -> Result<(String, serde_json::Value), String> {
    match s.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            let value = serde_json::from_str(value)
                .unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
            Ok((name.trim().to_string(), value))
        }
        _ => Err(format!(
            "{s:?} must look like NAME=VALUE (e.g. department=hr)"
        )),
    }
}

/// `IDENTITY=ROLE` of `--identity-role`.
fn parse_identity_role(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((identity, role)) if !identity.trim().is_empty() && !role.trim().is_empty() => {
            Ok((identity.trim().to_string(), role.trim().to_string()))
        }
        _ => Err(format!(
            "{s:?} must look like IDENTITY=ROLE (e.g. demo-agent=app_reader)"
        )),
    }
}

/// Loads settings for a command, applying `--log-format`.
pub fn load_settings(cli: &Cli) -> Result<Settings, crate::config::ConfigError> {
    let mut settings = Settings::load(cli.config.as_deref())?;
    if let Some(f) = cli.log_format {
        settings.log.format = f;
    }
    Ok(settings)
}

/// Runs the parsed command to completion and returns the process exit code. The client has
/// its own exit-code classes; every other command exits 0 or 1.
pub async fn main(cli: Cli) -> std::process::ExitCode {
    if let Command::Client(mut args) = cli.command {
        // The top-level --config is what a launched stdio server should use.
        let stdio = match args.options.transport {
            Some(t) => t == crate::client::args::TransportArg::Stdio,
            None => args.options.endpoint.is_none(),
        };
        if stdio && args.options.server_config.is_none() {
            args.options.server_config = cli.config.clone();
        }
        return crate::client::run(args).await;
    }
    match run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Runs a (non-client) command to completion.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let settings = load_settings(&cli)?;
    // Only `serve` may log to stdout: every other command answers there (a created key, a
    // verification report, `stdio`'s protocol).
    let stdout_is_output = !matches!(cli.command, Command::Serve);
    crate::telemetry::init(&settings.log, stdout_is_output);
    match cli.command {
        Command::Serve => {
            let gateway = crate::Gateway::start(settings).await?;
            gateway.wait().await?;
            Ok(())
        }
        Command::Client(_) => anyhow::bail!("the client runs through cli::main"),
        Command::Stdio => {
            let state = crate::AppState::build(settings).await?;
            state.join_fleet("stdio".into())?;
            let key = std::env::var("INTERLOCK_API_KEY")
                .ok()
                .filter(|k| !k.trim().is_empty());
            if key.is_none() {
                tracing::warn!(
                    "INTERLOCK_API_KEY is not set: governed tools will refuse every call"
                );
            }
            crate::stdio::serve(state, key).await?;
            Ok(())
        }
        Command::Dev(args) => match args.action {
            Some(DevAction::Token {
                identity,
                scopes,
                groups,
                ttl_secs,
            }) => dev::token(&args.data_dir, &identity, scopes, groups, ttl_secs),
            None => dev::run(settings, args).await,
        },
        Command::Migrate => admin::migrate(&settings).await,
        Command::Keys(cmd) => admin::keys(&settings, cmd).await,
        Command::Sources(cmd) => admin::sources(&settings, cmd).await,
        Command::Policy(PolicyCommand::Apply { file }) => {
            admin::policy_apply(&settings, &file).await
        }
        Command::Policy(PolicyCommand::Simulate(args)) => policy_lab::simulate(args).await,
        Command::Policy(PolicyCommand::Explain(args)) => policy_lab::explain(args).await,
        Command::Audit(cmd) => crate::cli::ledger::run(&settings, cmd).await,
        Command::Grants(cmd) => admin::grants(&settings, cmd).await,
        Command::Approvals { remote, command } => remote::approvals(&remote, command).await,
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{Cli, Command, DevAction, LogFormat};

    /// Options a subcommand's help refers to are accepted after it too.
    #[test]
    fn options_are_accepted_after_the_subcommand_that_uses_them() {
        let placements: [&[&str]; 3] = [
            &[
                "interlock",
                "dev",
                "--data-dir",
                "D",
                "token",
                "--identity",
                "x",
            ],
            &[
                "interlock",
                "dev",
                "token",
                "--identity",
                "x",
                "--data-dir",
                "D",
            ],
            &[
                "interlock",
                "--config",
                "c.toml",
                "dev",
                "token",
                "--data-dir",
                "D",
                "--log-format",
                "json",
            ],
        ];
        for argv in placements {
            let cli = Cli::try_parse_from(argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
            let Command::Dev(dev) = &cli.command else {
                panic!("{argv:?}: not dev");
            };
            assert_eq!(dev.data_dir, std::path::PathBuf::from("D"), "{argv:?}");
            assert!(
                matches!(dev.action, Some(DevAction::Token { .. })),
                "{argv:?}"
            );
        }
        let cli = Cli::try_parse_from([
            "interlock",
            "dev",
            "token",
            "--config",
            "c.toml",
            "--log-format",
            "json",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cli.config, Some(std::path::PathBuf::from("c.toml")));
        assert!(matches!(cli.log_format, Some(LogFormat::Json)));
    }
}
