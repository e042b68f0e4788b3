//! `interlock client`: the bundled, tools-only, ad hoc MCP tool client.
//!
//! `server-info`, `tools list` and `tools call NAME` over stdio (launching the bundled
//! `interlock stdio` as a child) or Streamable HTTP (an existing endpoint), in the modern
//! 2026-07-28 dialect or a handshake-era one (see [`negotiate`]). It sends only
//! `server/discover`, `initialize`, `notifications/initialized`, `tools/list`, `tools/call`
//! and `notifications/cancelled` (and, for `tools call --task`, `tasks/get` and
//! `tasks/result`: [`task_wait`]), one JSON object per message (never a batch), advertises no
//! client capability (but the tasks extension with `--task`, 2026-07-28), and answers a
//! server's `ping` over stdio.
//!
//! Entry point for the CLI: [`ClientArgs`] (a `clap::Args`) and [`run`].
//! Exit codes: [`exit`]. Output formats: [`output`].

pub mod args;
pub mod arguments;
pub mod call;
pub mod commands;
pub mod error;
pub mod exit;
pub mod message;
pub mod negotiate;
pub mod output;
pub mod pager;
pub mod session;
pub mod task_wait;
pub mod transport;

use std::io::Write as _;
use std::process::ExitCode;

use tokio::sync::watch;
use tokio::time::Instant;

pub use args::ClientArgs;
use args::{ClientCommand, LogLevel, OutputFormat, ToolsCommand, TransportArg};
use arguments::ArgumentsSource;
use commands::Report;
use error::ClientError;
use session::{Limits, Session};
use transport::http::HttpTransport;
use transport::stdio::{Launch, StdioTransport};
use transport::Transport;

/// Runs one client command: prints its output to stdout, diagnostics to stderr, and returns
/// the exit code of its class ([`exit::ExitClass`]).
pub async fn run(args: ClientArgs) -> ExitCode {
    let level = args.options.client_log_level;
    let (class, message) = match execute(args).await {
        // `execute` has printed the report's stdout already.
        Ok(report) => (report.class, report.note),
        Err(e) => (e.class(), Some(e.to_string())),
    };
    if let (Some(message), true) = (message, level >= LogLevel::Error) {
        eprintln!("interlock client: {}: {message}", class.name());
    }
    class.into()
}

fn print_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (e.g. `| head`) is not worth a second error.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// SIGINT → `true`, for the session to cancel the request in flight.
fn watch_interrupt() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = tx.send(true);
        }
    });
    rx
}

fn api_key() -> Option<String> {
    std::env::var("INTERLOCK_API_KEY")
        .ok()
        .map(|k| k.trim().to_owned())
        .filter(|k| !k.is_empty())
}

/// Builds the transport the options ask for; nothing is sent yet.
fn connect(args: &ClientArgs, api_key: Option<String>) -> Result<Box<dyn Transport>, ClientError> {
    let o = &args.options;
    let kind = o.transport.unwrap_or(if o.endpoint.is_some() {
        TransportArg::Http
    } else {
        TransportArg::Stdio
    });
    match kind {
        TransportArg::Http => {
            let Some(endpoint) = &o.endpoint else {
                return Err(ClientError::Usage(
                    "--transport http needs --endpoint URL".into(),
                ));
            };
            if o.server_config.is_some() || o.server_binary.is_some() {
                return Err(ClientError::Usage(
                    "--server-config and --server-binary apply to --transport stdio only".into(),
                ));
            }
            Ok(Box::new(HttpTransport::new(endpoint, api_key)?))
        }
        TransportArg::Stdio => {
            if o.endpoint.is_some() {
                return Err(ClientError::Usage(
                    "--endpoint applies to --transport http only".into(),
                ));
            }
            let program = match &o.server_binary {
                Some(p) => p.clone(),
                None => std::env::current_exe().map_err(|e| {
                    ClientError::transport(format!("cannot locate the interlock executable: {e}"))
                })?,
            };
            Ok(Box::new(StdioTransport::launch(&Launch {
                program,
                config: o.server_config.clone(),
                api_key,
                inherit_stderr: o.client_log_level >= LogLevel::Debug,
            })?))
        }
    }
}

async fn execute(args: ClientArgs) -> Result<Report, ClientError> {
    let started = Instant::now();
    let o = &args.options;
    // Usage errors come before anything is launched or sent.
    let arguments = match &args.command {
        ClientCommand::Tools(ToolsCommand::Call(call)) => Some(
            ArgumentsSource::from_flags(
                call.arguments.clone(),
                call.arguments_file.clone(),
                call.arguments_stdin,
            )?
            .read()?,
        ),
        _ => None,
    };
    let limits = Limits {
        per_request: o.timeout,
        deadline: o.max_timeout.map(|d| started + d),
    };
    let transport = connect(&args, api_key())?;
    let mut session = Session::new(
        transport,
        o.protocol_version.initial_dialect(),
        limits,
        watch_interrupt(),
    );
    if o.output == OutputFormat::Pretty {
        session.set_progress_hook(Box::new(|p| eprintln!("{}", output::pretty::progress(p))));
    }
    let result = operate(&mut session, &args, arguments).await;
    if let Ok(report) = &result {
        // Print before the (bounded) shutdown so the answer is not held back by it.
        print_stdout(&report.stdout);
    }
    session.close().await;
    result.map(|report| Report {
        stdout: String::new(),
        ..report
    })
}

async fn operate(
    session: &mut Session,
    args: &ClientArgs,
    arguments: Option<serde_json::Map<String, serde_json::Value>>,
) -> Result<Report, ClientError> {
    let o = &args.options;
    let negotiated = negotiate::open(session, &o.protocol_version).await?;
    if let Some(reason) = negotiated.as_ref().and_then(|n| n.fallback.as_deref()) {
        if o.client_log_level >= LogLevel::Info {
            eprintln!(
                "interlock client: falling back to initialize ({}): {reason}",
                session.dialect().version()
            );
        }
    }
    match &args.command {
        ClientCommand::ServerInfo => commands::server_info(session, negotiated, o.output).await,
        ClientCommand::Tools(ToolsCommand::List) => commands::tools_list(session, o.output).await,
        ClientCommand::Tools(ToolsCommand::Call(call)) => {
            let task = commands::TaskOptions {
                ask: call.task,
                ttl: call.task_ttl,
                progress: o.client_log_level >= LogLevel::Warn,
            };
            let arguments = arguments.unwrap_or_default();
            commands::tools_call(session, &call.name, arguments, o.output, task).await
        }
    }
}
