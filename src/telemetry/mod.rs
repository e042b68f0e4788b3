//! Logging: `tracing` to stderr (or stdout, as containers like it), human-readable or JSON;
//! the metrics recorder is [`metrics`].

pub mod metrics;
pub mod traces;

use serde::{Deserialize, Serialize};
use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// Where log lines go.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogStream {
    Stderr,
    Stdout,
}

/// `[log]`: the format, level and stream of the log.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    pub format: LogFormat,
    pub level: String,
    pub stream: LogStream,
}

/// Installs the global subscriber. `RUST_LOG` overrides the configured level. Safe to call
/// more than once (later calls are ignored). `stdout_is_output` is true for the commands
/// whose standard output is their answer (`stdio`'s protocol, `client`'s results): their
/// log stays on stderr whatever `log.stream` says.
pub fn init(settings: &LogSettings, stdout_is_output: bool) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    use std::io::IsTerminal;
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let to_stdout = settings.stream == LogStream::Stdout && !stdout_is_output;
    let (writer, terminal) = if to_stdout {
        (
            BoxMakeWriter::new(std::io::stdout),
            std::io::stdout().is_terminal(),
        )
    } else {
        (
            BoxMakeWriter::new(std::io::stderr),
            std::io::stderr().is_terminal(),
        )
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(colour(terminal, std::env::var_os("NO_COLOR").as_deref()))
        .with_target(false);
    let _ = match settings.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .try_init(),
    };
}

/// Whether log lines carry ANSI colour: only on a terminal, and never when `NO_COLOR` is set
/// to anything but the empty string (<https://no-color.org>). A host capturing the log (an
/// MCP client launching `interlock stdio`, journald, a container runtime) gets plain text.
fn colour(log_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    log_is_terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::colour;
    use std::ffi::OsStr;

    #[test]
    fn colour_only_on_a_terminal_and_never_with_no_color() {
        let cases = [
            (true, None, true),
            (true, Some(""), true),
            (true, Some("1"), false),
            (true, Some("false"), false),
            (false, None, false),
            (false, Some("1"), false),
        ];
        for (terminal, no_color, want) in cases {
            assert_eq!(
                colour(terminal, no_color.map(OsStr::new)),
                want,
                "{terminal} {no_color:?}"
            );
        }
    }
}
