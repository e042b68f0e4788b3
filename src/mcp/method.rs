//! The request methods InterLock serves and the dialects that serve them: what both the
//! dispatcher and the 2026-07-28 validation ladder resolve a method name against.

use crate::mcp::tasks::{TaskMethod, TaskSettings};
use crate::mcp::version::Dialect;

/// Methods of the handshake lifecycle only: the 2026-07-28 dialect refuses them (404 /
/// -32601), requests and notifications alike.
const HANDSHAKE_ONLY: &[&str] = &["initialize", "ping", "notifications/initialized"];

/// Whether `method` is refused in `dialect` because it belongs to the handshake only.
pub(crate) fn handshake_only_in(method: &str, dialect: Dialect) -> bool {
    dialect == Dialect::Modern && HANDSHAKE_ONLY.contains(&method)
}

/// A request method InterLock serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `server/discover`
    Discover,
    /// `initialize` (handshake only)
    Initialize,
    /// `ping` (handshake only)
    Ping,
    /// `tools/list`
    ToolsList,
    /// `tools/call`
    ToolsCall,
    /// `tasks/*`, where tasks are offered ([`crate::mcp::tasks`]).
    Task(TaskMethod),
}

impl Method {
    /// The method `name` names in `dialect`, if it is served there.
    pub fn resolve(name: &str, dialect: Dialect, tasks: &TaskSettings) -> Option<Method> {
        if let Some(task) = TaskMethod::resolve(name, dialect, tasks) {
            return Some(Method::Task(task));
        }
        let method = match name {
            "server/discover" => Method::Discover,
            "initialize" => Method::Initialize,
            "ping" => Method::Ping,
            "tools/list" => Method::ToolsList,
            "tools/call" => Method::ToolsCall,
            _ => return None,
        };
        match dialect {
            Dialect::Legacy => None,
            _ if handshake_only_in(name, dialect) => None,
            _ => Some(method),
        }
    }
}
