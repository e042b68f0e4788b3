//! Why a call to a source failed, from the driver's typed errors and SQLSTATE
//! classes — never from message text.
//!
//! Only failures of the source itself (it cannot be reached, TLS to it fails,
//! it is shutting down or cannot take the connection) may count towards its
//! circuit breaker. Everything the caller's statement or parameters cause —
//! a bad value for `$n`, division by zero, a cast that fails, a statement
//! timeout — is the caller's, and one agent's mistakes must never open the
//! circuit for every other agent.

use std::error::Error as StdError;

use tokio_postgres::error::SqlState;

/// Where in a call the error happened: connecting decides more (a refused
/// login makes the source unusable) than running a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Connect,
    Statement,
}

/// The cause of a failed call to a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The source cannot be reached or dropped the connection (counts).
    Connection(&'static str),
    /// TLS to the source failed (counts).
    Tls,
    /// The server is shutting down, restarting or refusing connections (counts).
    ServerUnavailable(&'static str),
    /// The statement was cancelled: our cancel or its statement timeout.
    Cancelled,
    /// The database refused the caller's statement or a parameter value.
    Statement { code: String },
    /// The driver could not encode a parameter or decode a value (the caller's).
    Driver,
}

impl Cause {
    /// Whether this failure counts towards opening the source's circuit.
    pub fn counts_for_breaker(&self) -> bool {
        matches!(
            self,
            Cause::Connection(_) | Cause::Tls | Cause::ServerUnavailable(_)
        )
    }
}

/// Classifies a tokio-postgres error.
pub fn classify(e: &tokio_postgres::Error, phase: Phase) -> Cause {
    if let Some(db) = e.as_db_error() {
        return classify_state(db.code(), phase);
    }
    if let Some(cause) = source_cause(e) {
        return cause;
    }
    if e.is_closed() {
        return Cause::Connection("connection closed");
    }
    match phase {
        // No server answer and no I/O error while connecting: the handshake failed.
        Phase::Connect => Cause::Connection("could not connect"),
        Phase::Statement => Cause::Driver,
    }
}

/// The cause named by a SQLSTATE.
pub fn classify_state(code: &SqlState, phase: Phase) -> Cause {
    let text = code.code();
    if *code == SqlState::QUERY_CANCELED {
        return Cause::Cancelled;
    }
    if *code == SqlState::ADMIN_SHUTDOWN {
        return Cause::ServerUnavailable("server shutting down");
    }
    if *code == SqlState::CRASH_SHUTDOWN {
        return Cause::ServerUnavailable("server crashed");
    }
    if *code == SqlState::CANNOT_CONNECT_NOW {
        return Cause::ServerUnavailable("server not accepting connections");
    }
    if *code == SqlState::TOO_MANY_CONNECTIONS {
        return Cause::ServerUnavailable("server has no free connection slots");
    }
    if text.starts_with("08") {
        return Cause::Connection("connection exception");
    }
    match phase {
        // Invalid login, unknown database and the like make the source unusable.
        Phase::Connect => Cause::ServerUnavailable("the server refused the connection"),
        Phase::Statement => Cause::Statement {
            code: text.to_string(),
        },
    }
}

/// Walks the error's sources for an I/O or TLS error.
fn source_cause(e: &tokio_postgres::Error) -> Option<Cause> {
    let mut next: Option<&(dyn StdError + 'static)> = e.source();
    while let Some(err) = next {
        if err.downcast_ref::<rustls::Error>().is_some() {
            return Some(Cause::Tls);
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if io
                .get_ref()
                .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some())
            {
                return Some(Cause::Tls);
            }
            return Some(Cause::Connection(io_kind(io.kind())));
        }
        next = err.source();
    }
    None
}

fn io_kind(kind: std::io::ErrorKind) -> &'static str {
    use std::io::ErrorKind as K;
    match kind {
        K::ConnectionRefused => "connection refused",
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => "connection reset",
        K::TimedOut => "connection timed out",
        K::UnexpectedEof => "connection lost",
        K::AddrNotAvailable | K::NotFound => "address unavailable",
        _ => "connection failed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_table() {
        let cases: &[(&str, Phase, bool)] = &[
            // (SQLSTATE, phase, counts for the breaker)
            ("57P01", Phase::Statement, true),
            ("57P02", Phase::Statement, true),
            ("57P03", Phase::Statement, true),
            ("53300", Phase::Connect, true),
            ("08006", Phase::Statement, true),
            ("08P01", Phase::Statement, true),
            ("28P01", Phase::Connect, true),
            ("3D000", Phase::Connect, true),
            ("57014", Phase::Statement, false),
            ("22P02", Phase::Statement, false),
            ("22012", Phase::Statement, false),
            ("42601", Phase::Statement, false),
            ("42703", Phase::Statement, false),
            ("0A000", Phase::Statement, false),
            ("25006", Phase::Statement, false),
            ("54000", Phase::Statement, false),
            ("55P03", Phase::Statement, false),
            ("40001", Phase::Statement, false),
            ("42501", Phase::Statement, false),
        ];
        for (code, phase, counts) in cases {
            let cause = classify_state(&SqlState::from_code(code), *phase);
            assert_eq!(
                cause.counts_for_breaker(),
                *counts,
                "{code} {phase:?}: {cause:?}"
            );
        }
    }
}
