//! Exit-code classes of `interlock client`.
//!
//! The MCP tool-client contract asks a client to distinguish transport failures, JSON-RPC or
//! MCP protocol errors, invalid result types, input-required results, tool results with
//! `isError: true` and successful results. MCP does not number them; InterLock does, once,
//! here, so that scripts can branch on the exit code alone:
//!
//! | code | class | meaning |
//! |---|---|---|
//! | 0 | [`ExitClass::Success`] | complete result, `isError` absent or `false` (a queued write is a success) |
//! | 1 | [`ExitClass::ToolError`] | complete `tools/call` result with `isError: true` (refusals in the handshake dialect) |
//! | 2 | [`ExitClass::Usage`] | bad command line or tool arguments; nothing was sent (clap uses 2 too) |
//! | 3 | [`ExitClass::Transport`] | could not reach the server, the child exited, HTTP failure, unreadable reply |
//! | 4 | [`ExitClass::Protocol`] | the server answered with a JSON-RPC error, or broke the protocol (cursor loop, bad version) |
//! | 5 | [`ExitClass::InvalidResult`] | a result that is not an object, lacks `content`, or has an unknown `resultType` |
//! | 6 | [`ExitClass::InputRequired`] | `resultType: "input_required"`: preserved and returned, not retried |
//! | 7 | [`ExitClass::Timeout`] | `--timeout` or `--max-timeout` expired; the request was cancelled |
//! | 130 | [`ExitClass::Interrupted`] | SIGINT (Ctrl-C); the request was cancelled |
//!
//! 1 is the tool's own "no" because it is the most common non-zero answer and what a shell
//! user expects from a failing command; every client-side or protocol failure is ≥ 2.

use std::process::ExitCode;

/// One exit-code class. The discriminant is the process exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExitClass {
    /// A complete result without `isError: true`.
    Success = 0,
    /// A complete `tools/call` result with `isError: true`.
    ToolError = 1,
    /// Invalid command line or tool arguments.
    Usage = 2,
    /// The transport failed.
    Transport = 3,
    /// A JSON-RPC error or another protocol violation.
    Protocol = 4,
    /// A result of an unrecognized or invalid type.
    InvalidResult = 5,
    /// A modern `input_required` result.
    InputRequired = 6,
    /// A per-request or whole-command timeout.
    Timeout = 7,
    /// Interrupted by SIGINT.
    Interrupted = 130,
}

impl ExitClass {
    /// The numeric exit code.
    pub fn code(self) -> u8 {
        self as u8
    }

    /// A stable snake_case name, used in stderr messages and JSON output.
    pub fn name(self) -> &'static str {
        match self {
            ExitClass::Success => "success",
            ExitClass::ToolError => "tool_error",
            ExitClass::Usage => "usage",
            ExitClass::Transport => "transport",
            ExitClass::Protocol => "protocol_error",
            ExitClass::InvalidResult => "invalid_result",
            ExitClass::InputRequired => "input_required",
            ExitClass::Timeout => "timeout",
            ExitClass::Interrupted => "interrupted",
        }
    }

    /// Every class, in code order (documentation and tests).
    pub const ALL: [ExitClass; 9] = [
        ExitClass::Success,
        ExitClass::ToolError,
        ExitClass::Usage,
        ExitClass::Transport,
        ExitClass::Protocol,
        ExitClass::InvalidResult,
        ExitClass::InputRequired,
        ExitClass::Timeout,
        ExitClass::Interrupted,
    ];
}

impl From<ExitClass> for ExitCode {
    fn from(class: ExitClass) -> Self {
        ExitCode::from(class.code())
    }
}

/// The exit-code table as shown in `--help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0    success: complete result (a queued write is a success)
  1    tool result with isError: true (e.g. a governed refusal in the handshake dialect)
  2    usage: invalid options or tool arguments; nothing was sent
  3    transport failure: server unreachable, child exited, HTTP failure, unreadable reply
  4    protocol error: JSON-RPC error answer or other protocol violation
  5    invalid result: not an object, no content array, or unknown resultType
  6    input required: resultType input_required (returned, not retried)
  7    timeout: --timeout or --max-timeout expired; the request was cancelled
  130  interrupted (SIGINT); the request was cancelled";

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_and_names_are_distinct() {
        let codes: HashSet<u8> = ExitClass::ALL.iter().map(|c| c.code()).collect();
        let names: HashSet<&str> = ExitClass::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(codes.len(), ExitClass::ALL.len());
        assert_eq!(names.len(), ExitClass::ALL.len());
    }

    #[test]
    fn help_lists_every_code() {
        for class in ExitClass::ALL {
            let line = format!("\n  {:<4}", class.code());
            assert!(
                EXIT_CODES_HELP.contains(&line),
                "{class:?} missing from help"
            );
        }
    }

    #[test]
    fn documented_numbers() {
        assert_eq!(ExitClass::Success.code(), 0);
        assert_eq!(ExitClass::ToolError.code(), 1);
        assert_eq!(ExitClass::Usage.code(), 2);
        assert_eq!(ExitClass::Transport.code(), 3);
        assert_eq!(ExitClass::Protocol.code(), 4);
        assert_eq!(ExitClass::InvalidResult.code(), 5);
        assert_eq!(ExitClass::InputRequired.code(), 6);
        assert_eq!(ExitClass::Timeout.code(), 7);
        assert_eq!(ExitClass::Interrupted.code(), 130);
    }
}
