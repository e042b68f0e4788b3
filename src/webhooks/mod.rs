//! Signed notifications to operators' endpoints, following the Standard Webhooks
//! convention (`webhook-id`, `webhook-timestamp`, `webhook-signature`).
//!
//! Every event published on a replica that an endpoint subscribes to is put in an outbox
//! in the control database (`webhook_deliveries`), one row per endpoint; every replica
//! delivers due rows, claimed with a lease (`FOR UPDATE SKIP LOCKED`), retried with
//! exponential backoff for up to 24 hours. So a delivery is made at least once, across
//! restarts and replicas; its `webhook-id` (the row's id) stays the same on every attempt,
//! so a receiver can drop duplicates. A `slack` endpoint gets a Slack-compatible message
//! instead of the event.

mod deliver;
pub mod signature;
pub mod target;

use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use interlock_actors::events::{Event, EventBus};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::control::{webhooks as outbox, ControlPool};

/// The events an endpoint may subscribe to.
pub const EVENTS: [&str; 9] = [
    "approval.created",
    "approval.decided",
    "approval.executed",
    "approval.failed",
    "approval.expired",
    "approval.withdrawn",
    "approval.returned",
    "circuit.changed",
    "audit.checkpoint",
];

/// The webhook event of a gateway event, if it has one.
pub fn event_name(e: &Event) -> Option<&'static str> {
    Some(match e {
        Event::ApprovalCreated { .. } => "approval.created",
        Event::ApprovalDecided { .. } => "approval.decided",
        Event::ApprovalExecuted { state, .. } if state == "executed" => "approval.executed",
        Event::ApprovalExecuted { .. } => "approval.failed",
        Event::ApprovalExpired { .. } => "approval.expired",
        Event::ApprovalWithdrawn { .. } => "approval.withdrawn",
        Event::ApprovalReturned { .. } => "approval.returned",
        Event::CircuitChanged { .. } => "circuit.changed",
        Event::AuditCheckpoint { .. } => "audit.checkpoint",
        Event::ActorRestarted { .. } | Event::PolicyReported { .. } => return None,
    })
}

/// The body of a delivery: `{type, timestamp, data}`.
pub fn payload(name: &str, event: &Event) -> Value {
    json!({"type": name, "timestamp": chrono::Utc::now(), "data": event})
}

pub struct Webhooks {
    pub control: ControlPool,
    pub allow_private: bool,
    pub console_url: String,
}

impl Webhooks {
    /// Records this replica's events in the outbox, and delivers due rows.
    pub fn start(self: &Arc<Self>, events: &EventBus, stop: &CancellationToken) {
        let (recorder, mut recorded) = mpsc::channel(1024);
        events.record_to(recorder);
        let this = self.clone();
        tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
            while let Some(event) = recorded.recv().await {
                let Some(name) = event_name(&event) else {
                    continue;
                };
                if let Err(e) =
                    outbox::enqueue(&this.control, name, &payload(name, &event), None).await
                {
                    tracing::error!(error = %e, event = name, "a webhook event could not be put in the outbox; it is lost");
                    metrics::counter!("interlock_webhook_events_dropped_total").increment(1);
                }
            }
        }));
        tokio::spawn(
            stop.clone()
                .run_until_cancelled_owned(deliver::run(self.clone())),
        );
    }
}
