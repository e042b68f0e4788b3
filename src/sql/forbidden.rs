//! The reasons a statement kind is refused, with the sentence parts used in
//! refusals: what was refused and what to do instead.

use serde::Serialize;

/// Why a statement kind is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ForbiddenKind {
    TableCreation,
    LockingClause,
    Copy,
    Procedural,
    PreparedStatement,
    Cursor,
    TransactionControl,
    SessionState,
    Notification,
    LockTable,
    Maintenance,
    Truncate,
    Comment,
    Ddl,
    Dcl,
    ServerControl,
    NestedExplain,
    NestedDml,
    Unsupported,
}

impl ForbiddenKind {
    /// Human name of the statement kind, used as the subject of the refusal sentence.
    pub fn name(self) -> &'static str {
        match self {
            ForbiddenKind::TableCreation => {
                "Creating tables (SELECT INTO, CREATE TABLE AS, temporary tables)"
            }
            ForbiddenKind::LockingClause => "A locking clause (FOR UPDATE / FOR SHARE)",
            ForbiddenKind::Copy => "COPY and file transfer",
            ForbiddenKind::Procedural => "Procedural code (CALL, DO, control flow)",
            ForbiddenKind::PreparedStatement => "PREPARE / EXECUTE / DEALLOCATE",
            ForbiddenKind::Cursor => "Cursors (DECLARE, FETCH, MOVE, CLOSE)",
            ForbiddenKind::TransactionControl => {
                "Transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, SET TRANSACTION)"
            }
            ForbiddenKind::SessionState => "Session settings (SET, RESET, SHOW, DISCARD)",
            ForbiddenKind::Notification => "LISTEN / NOTIFY / UNLISTEN",
            ForbiddenKind::LockTable => "LOCK TABLE",
            ForbiddenKind::Maintenance => {
                "Maintenance (VACUUM, ANALYZE, CLUSTER, REINDEX, REFRESH)"
            }
            ForbiddenKind::Truncate => "TRUNCATE",
            ForbiddenKind::Comment => "COMMENT ON",
            ForbiddenKind::Ddl => "Schema changes (CREATE, ALTER, DROP)",
            ForbiddenKind::Dcl => "Privilege changes (GRANT, REVOKE, roles, policies)",
            ForbiddenKind::ServerControl => {
                "Server-level statements (LOAD, extensions, foreign servers)"
            }
            ForbiddenKind::NestedExplain => "EXPLAIN of EXPLAIN",
            ForbiddenKind::NestedDml => "A data-modifying statement below the top level",
            ForbiddenKind::Unsupported => "This statement kind",
        }
    }

    /// What the agent can do instead.
    pub fn hint(self) -> &'static str {
        match self {
            ForbiddenKind::TableCreation | ForbiddenKind::LockingClause => {
                "run a plain SELECT and let the gateway return the rows"
            }
            ForbiddenKind::Copy => "use a SELECT, whose result is capped and masked",
            ForbiddenKind::Procedural
            | ForbiddenKind::PreparedStatement
            | ForbiddenKind::Cursor => "send the SQL itself as one plain statement",
            ForbiddenKind::TransactionControl | ForbiddenKind::SessionState => {
                "the gateway manages transactions and session settings itself"
            }
            ForbiddenKind::Truncate => "use DELETE, which goes through approval",
            ForbiddenKind::NestedDml => {
                "put the INSERT/UPDATE/DELETE/MERGE at the top level or in a top-level WITH"
            }
            ForbiddenKind::NestedExplain => "send a single EXPLAIN",
            ForbiddenKind::Notification
            | ForbiddenKind::LockTable
            | ForbiddenKind::Maintenance
            | ForbiddenKind::Comment
            | ForbiddenKind::Ddl
            | ForbiddenKind::Dcl
            | ForbiddenKind::ServerControl
            | ForbiddenKind::Unsupported => "ask an administrator if this change is needed",
        }
    }
}
