//! What replicas tell each other on the fleet channel (one JSON notification each, at most
//! 8000 bytes: PostgreSQL's limit for a payload).

use interlock_actors::breaker::ForceAction;
use interlock_actors::events::Event;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// One notification: who sent it, and what happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope {
    pub from: Uuid,
    #[serde(flatten)]
    pub message: FleetMessage,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FleetMessage {
    /// An approved write changed these tables: their new fleet-wide generations.
    Invalidated {
        source: String,
        /// (schema, table, generation)
        tables: Vec<(String, String, i64)>,
    },
    /// An operator forced a circuit (open is also recorded in `circuit_overrides`).
    Circuit {
        source: String,
        action: ForceAction,
        reason: String,
    },
    /// A fleet-wide event, for this replica's `/admin/events` subscribers.
    Event { event: Event },
    /// Access or sources changed in the control database: drop what is cached of it now
    /// (rather than within `identity.cache_ttl_ms` / `sources.refresh_interval_ms`).
    Changed { what: Changed },
}

/// What an operator changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Changed {
    /// Identities or keys (created, revoked, rates).
    Keys,
    /// Grants, roles, policies, redactions, approver scopes.
    Grants,
    /// Source registrations (added, updated, enabled, disabled).
    Sources,
}
