//! Logging: `tracing` to stderr, human-readable or JSON; the metrics recorder is
//! [`metrics`].

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

/// `[log]`: the format and level of the log.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogSettings {
    pub format: LogFormat,
    pub level: String,
}

/// Installs the global subscriber. `RUST_LOG` overrides the configured level. Safe to call
/// more than once (later calls are ignored).
pub fn init(settings: &LogSettings) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.level))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        ))
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
/// to anything but the empty string (<https://no-color.org>). A host capturing stderr (an
/// MCP client launching `interlock stdio`, journald, a container runtime) gets plain text.
fn colour(stderr_is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    stderr_is_terminal && no_color.is_none_or(|v| v.is_empty())
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
