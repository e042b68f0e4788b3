//! The gateway's event bus: circuit changes, actor restarts and approval lifecycle events,
//! fanned out to `GET /admin/events` subscribers. Slow subscribers lose old events (they are
//! told how many) rather than slowing the gateway down.

use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc};

/// One event, serialized as the SSE `data` of its `type`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Event {
    #[serde(rename = "circuit.changed")]
    CircuitChanged {
        source: String,
        from: String,
        to: String,
        reason: String,
        at: DateTime<Utc>,
    },
    /// A supervised actor ended and was restarted (see `supervise`).
    #[serde(rename = "actor.restarted")]
    ActorRestarted {
        actor: String,
        /// How the previous incarnation ended.
        reason: String,
        restarts: u64,
        at: DateTime<Utc>,
    },
    #[serde(rename = "approval.created")]
    ApprovalCreated {
        id: String,
        source: String,
        requester: String,
        at: DateTime<Utc>,
    },
    #[serde(rename = "approval.decided")]
    ApprovalDecided {
        id: String,
        source: String,
        approver: String,
        decision: String,
        state: String,
        at: DateTime<Utc>,
    },
    #[serde(rename = "approval.executed")]
    ApprovalExecuted {
        id: String,
        source: String,
        state: String,
        /// Rows the write changed in all tables (PostgreSQL's count), when it ran.
        #[serde(default)]
        rows_affected: Option<i64>,
        /// Rows the write changed per table (`{"schema.table": n}`), when it ran.
        #[serde(default)]
        rows_changed: Option<serde_json::Value>,
        at: DateTime<Utc>,
    },
    #[serde(rename = "approval.expired")]
    ApprovalExpired {
        id: String,
        source: String,
        at: DateTime<Utc>,
    },
    /// An approved run changed more rows than the planner's estimate it was bound to: it
    /// was rolled back and the approval is pending again, bound to the count.
    #[serde(rename = "approval.returned")]
    ApprovalReturned {
        id: String,
        source: String,
        /// Rows the rolled-back run changed.
        measured: i64,
        /// The estimate it was bound to.
        #[serde(default)]
        estimated: Option<i64>,
        at: DateTime<Utc>,
    },
    /// The requester withdrew its pending approval (it cancelled the MCP task waiting on
    /// it).
    #[serde(rename = "approval.withdrawn")]
    ApprovalWithdrawn {
        id: String,
        source: String,
        requester: String,
        at: DateTime<Utc>,
    },
    /// A report-only policy rule matched a call and enforcing it would have changed the
    /// answer (`would`: a refusal, approvals, a row cap or masked columns).
    #[serde(rename = "policy.reported")]
    PolicyReported {
        source: String,
        policy: String,
        rule: String,
        identity: String,
        request_id: String,
        would: serde_json::Value,
        at: DateTime<Utc>,
    },
    /// A new signed checkpoint of the audit log, published by the replica that stored it,
    /// for external witnesses to keep.
    #[serde(rename = "audit.checkpoint")]
    AuditCheckpoint {
        tree_size: i64,
        /// Base64, as in the note.
        root_hash: String,
        /// The signed note (c2sp tlog-checkpoint).
        note: String,
        at: DateTime<Utc>,
    },
}

impl Event {
    /// The SSE event name.
    pub fn name(&self) -> &'static str {
        match self {
            Event::CircuitChanged { .. } => "circuit.changed",
            Event::ActorRestarted { .. } => "actor.restarted",
            Event::ApprovalCreated { .. } => "approval.created",
            Event::ApprovalDecided { .. } => "approval.decided",
            Event::ApprovalExecuted { .. } => "approval.executed",
            Event::ApprovalExpired { .. } => "approval.expired",
            Event::ApprovalWithdrawn { .. } => "approval.withdrawn",
            Event::ApprovalReturned { .. } => "approval.returned",
            Event::AuditCheckpoint { .. } => "audit.checkpoint",
            Event::PolicyReported { .. } => "policy.reported",
        }
    }

    /// Facts of the whole fleet (approvals live in the control database), as opposed to
    /// the state of this replica's own machinery (its breakers, its actors): only these
    /// are forwarded to the other replicas.
    pub fn fleet_wide(&self) -> bool {
        matches!(
            self,
            Event::ApprovalCreated { .. }
                | Event::ApprovalDecided { .. }
                | Event::ApprovalExecuted { .. }
                | Event::ApprovalExpired { .. }
                | Event::ApprovalWithdrawn { .. }
                | Event::ApprovalReturned { .. }
        )
    }

    /// Events about the gateway's machinery, for operators only.
    pub fn operator_only(&self) -> bool {
        matches!(
            self,
            Event::CircuitChanged { .. }
                | Event::ActorRestarted { .. }
                | Event::AuditCheckpoint { .. }
                | Event::PolicyReported { .. }
        )
    }

    /// The source the event concerns (approvers only see their sources' events); empty for
    /// events about the gateway itself.
    pub fn source(&self) -> &str {
        match self {
            Event::ActorRestarted { .. } | Event::AuditCheckpoint { .. } => "",
            Event::CircuitChanged { source, .. }
            | Event::ApprovalCreated { source, .. }
            | Event::ApprovalDecided { source, .. }
            | Event::ApprovalExecuted { source, .. }
            | Event::ApprovalExpired { source, .. }
            | Event::ApprovalWithdrawn { source, .. }
            | Event::ApprovalReturned { source, .. }
            | Event::PolicyReported { source, .. } => source,
        }
    }
}

#[derive(Debug, Clone)]
pub struct EventBus {
    tx: broadcast::Sender<Event>,
    /// Where fleet-wide events also go (the fleet channel), once a fleet is attached.
    outbox: Arc<OnceLock<mpsc::Sender<Event>>>,
    /// Where every event of this replica also goes (the webhook outbox), once attached.
    recorder: Arc<OnceLock<mpsc::Sender<Event>>>,
}

impl EventBus {
    pub fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(capacity.max(16));
        Self {
            tx,
            outbox: Arc::default(),
            recorder: Arc::default(),
        }
    }

    /// Publishes an event of this replica to current subscribers (having none is not an
    /// error) and, when it is fleet-wide, to the other replicas.
    pub fn publish(&self, event: Event) {
        if let Some(recorder) = self.recorder.get() {
            if recorder.try_send(event.clone()).is_err() {
                metrics::counter!("interlock_webhook_events_dropped_total").increment(1);
            }
        }
        if let (true, Some(outbox)) = (event.fleet_wide(), self.outbox.get()) {
            if outbox.try_send(event.clone()).is_err() {
                metrics::counter!("interlock_fleet_events_dropped_total").increment(1);
            }
        }
        let _ = self.tx.send(event);
    }

    /// Delivers an event that happened on another replica, to this replica's subscribers
    /// only.
    pub fn deliver(&self, event: Event) {
        let _ = self.tx.send(event);
    }

    /// Hands every event published on this replica from now on (not those delivered from
    /// other replicas) to `recorder` too. False when one was attached already.
    pub fn record_to(&self, recorder: mpsc::Sender<Event>) -> bool {
        self.recorder.set(recorder).is_ok()
    }

    /// Hands every fleet-wide event published from now on to `outbox` too. False when an
    /// outbox was attached already.
    pub fn forward_to(&self, outbox: mpsc::Sender<Event>) -> bool {
        self.outbox.set(outbox).is_ok()
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.tx.subscribe()
    }
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new(1024)
    }
}
