//! The command line of `interlock client` (everything after `client`).
//!
//! Options are global to the client's subcommands, so they may stand before or after
//! `server-info`, `tools list` or `tools call NAME`. The API key is read from
//! `INTERLOCK_API_KEY` only; it is never an argument.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};

use crate::client::exit::EXIT_CODES_HELP;
use crate::client::negotiate::VersionChoice;

/// `interlock client`: a tools-only ad hoc MCP client for InterLock.
#[derive(Debug, Clone, Args)]
#[command(
    version,
    about = "Tools-only ad hoc MCP client: server-info, tools list, tools call",
    long_about = "Tools-only ad hoc MCP client for InterLock.\n\n\
        Over stdio (the default) it launches the bundled server itself (`interlock stdio`) \
        and stops it when done; over HTTP it connects to an existing endpoint and never \
        starts one. The API key comes from INTERLOCK_API_KEY, never from an argument.",
    after_help = EXIT_CODES_HELP
)]
pub struct ClientArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: ClientCommand,
    /// Connection, protocol, timeout and output options.
    #[command(flatten)]
    pub options: ClientOptions,
}

/// The client's subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum ClientCommand {
    /// Show the server's identity, negotiated protocol version and capabilities.
    ServerInfo,
    /// List or call tools.
    #[command(subcommand)]
    Tools(ToolsCommand),
}

/// `tools …`.
#[derive(Debug, Clone, Subcommand)]
pub enum ToolsCommand {
    /// List every tool, following tools/list pagination to the last page.
    List,
    /// Call one tool (names are case-sensitive).
    Call(CallArgs),
}

/// `tools call NAME [arguments]`.
#[derive(Debug, Clone, Args)]
pub struct CallArgs {
    /// The tool name, as listed by `tools list`.
    pub name: String,
    /// The tool arguments as a JSON object.
    #[arg(long, value_name = "JSON", group = "tool_arguments")]
    pub arguments: Option<String>,
    /// Read the tool arguments (a JSON object) from a file.
    #[arg(long, value_name = "PATH", group = "tool_arguments")]
    pub arguments_file: Option<PathBuf>,
    /// Read the tool arguments (a JSON object) from standard input.
    #[arg(long, group = "tool_arguments")]
    pub arguments_stdin: bool,
    /// Ask for an MCP task (2025-11-25 or 2026-07-28): a call held for approval is waited
    /// for, with a progress line on stderr, and its final result is the output. Ctrl-C or
    /// --max-timeout stop the wait, never the task.
    #[arg(long)]
    pub task: bool,
    /// The task's ttl (2025-11-25 only: in 2026-07-28 the server chooses), e.g. 10m.
    #[arg(long, value_name = "SECONDS", value_parser = parse_duration, requires = "task")]
    pub task_ttl: Option<Duration>,
}

/// Options shared by every client subcommand.
#[derive(Debug, Clone, Args)]
pub struct ClientOptions {
    /// stdio launches the bundled server; http connects to --endpoint
    /// [default: http when --endpoint is given, else stdio].
    #[arg(long, value_enum, global = true)]
    pub transport: Option<TransportArg>,

    /// Streamable HTTP endpoint of a running gateway, e.g. http://127.0.0.1:8080/mcp.
    #[arg(long, value_name = "URL", global = true)]
    pub endpoint: Option<String>,

    /// auto (server/discover, falling back to initialize), 2026-07-28, 2025-11-25,
    /// 2025-06-18 or 2025-03-26.
    #[arg(long, value_name = "VALUE|auto", default_value = "auto",
          value_parser = VersionChoice::parse, global = true)]
    pub protocol_version: VersionChoice,

    /// Per-request timeout (e.g. 30, 1.5s, 500ms, 2m); progress notifications restart it.
    #[arg(long, value_name = "SECONDS", default_value = "60s",
          value_parser = parse_duration, global = true)]
    pub timeout: Duration,

    /// Limit for the whole command, including startup and every page; never restarted.
    #[arg(long, value_name = "SECONDS", value_parser = parse_duration, global = true)]
    pub max_timeout: Option<Duration>,

    /// mcp-json (lossless MCP results), json, jsonl or pretty.
    #[arg(long, value_enum, default_value = "json", global = true)]
    pub output: OutputFormat,

    /// Client diagnostics on stderr; debug also passes the stdio server's stderr through.
    #[arg(
        long,
        value_enum,
        value_name = "LEVEL",
        default_value = "warn",
        global = true
    )]
    pub client_log_level: LogLevel,

    /// Never prompt. Input-required results are always returned as they are (this client
    /// has no interactive mode), so this only makes that choice explicit.
    #[arg(long, global = true)]
    pub non_interactive: bool,

    /// stdio only: configuration file passed to the bundled server as --config.
    #[arg(long, value_name = "PATH", global = true)]
    pub server_config: Option<PathBuf>,

    /// TEST ONLY: the InterLock executable to launch for stdio instead of the current one.
    #[arg(long, value_name = "PATH", global = true, hide = true)]
    pub server_binary: Option<PathBuf>,
}

/// `--transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TransportArg {
    /// Launch `interlock stdio` as a child process.
    Stdio,
    /// Connect to an existing Streamable HTTP endpoint.
    Http,
}

/// `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Lossless: each MCP result exactly as received, in a small versioned envelope.
    McpJson,
    /// One indented JSON document (tool inventory flattened).
    Json,
    /// One JSON value per line (for tools list: one tool per line).
    Jsonl,
    /// Human-readable text.
    Pretty,
}

/// `--client-log-level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Errors and warnings.
    Warn,
    /// Also negotiation notes.
    Info,
    /// Also the server's stderr.
    Debug,
}

/// Parses `30`, `1.5`, `1.5s`, `500ms` or `2m` into a positive duration.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 30, 1.5s, 500ms, 2m)"))?;
    let secs = value * scale;
    if !secs.is_finite() || secs <= 0.0 || secs > 86_400.0 * 365.0 {
        return Err(format!(
            "{text:?} must be a positive duration of at most a year"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Top {
        #[command(subcommand)]
        cmd: Sub,
    }

    #[derive(Subcommand)]
    enum Sub {
        Client(ClientArgs),
    }

    fn parse(args: &[&str]) -> Result<ClientArgs, clap::Error> {
        let mut full = vec!["interlock", "client"];
        full.extend_from_slice(args);
        Top::try_parse_from(full).map(|t| match t.cmd {
            Sub::Client(c) => c,
        })
    }

    #[test]
    fn command_is_valid() {
        Top::command().debug_assert();
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        for bad in ["0", "-1", "x", "", "1h", "NaN"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn options_anywhere_and_defaults() {
        let a = parse(&["tools", "list", "--output", "mcp-json", "--timeout", "5"]).unwrap();
        assert!(matches!(
            a.command,
            ClientCommand::Tools(ToolsCommand::List)
        ));
        assert_eq!(a.options.output, OutputFormat::McpJson);
        assert_eq!(a.options.timeout, Duration::from_secs(5));
        assert_eq!(a.options.protocol_version, VersionChoice::Auto);
        let b = parse(&["--protocol-version", "2025-06-18", "server-info"]).unwrap();
        assert_eq!(
            b.options.protocol_version,
            VersionChoice::Handshake("2025-06-18".into())
        );
        assert!(parse(&["--protocol-version", "1999-01-01", "server-info"]).is_err());
    }

    #[test]
    fn argument_forms_are_exclusive() {
        let ok = parse(&["tools", "call", "t", "--arguments", "{}"]).unwrap();
        match ok.command {
            ClientCommand::Tools(ToolsCommand::Call(c)) => {
                assert_eq!(c.name, "t");
                assert_eq!(c.arguments.as_deref(), Some("{}"));
            }
            other => panic!("{other:?}"),
        }
        for combo in [
            &["--arguments", "{}", "--arguments-stdin"][..],
            &["--arguments", "{}", "--arguments-file", "f"][..],
            &["--arguments-file", "f", "--arguments-stdin"][..],
        ] {
            let mut args = vec!["tools", "call", "t"];
            args.extend_from_slice(combo);
            let err = parse(&args).err().unwrap();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::ArgumentConflict,
                "{combo:?}"
            );
        }
    }
}
