//! Anchoring the audit log outside the control database: signing checkpoints on a
//! schedule and sending each to an RFC 3161 timestamp authority, whose signed answer is
//! kept beside it. Nothing here is on a governed call's path; a failure is logged,
//! counted and retried at the next interval.

use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use chrono::{DateTime, Utc};

use interlock_actors::events::{Event, EventBus};

use crate::control::ledger::{self, StoredCheckpoint};
use crate::control::{ControlError, ControlPool};
use crate::ledger::timestamp;
use crate::ledger::CheckpointKey;

pub mod witness;

pub use witness::WitnessFile;

/// Where checkpoints are anchored besides the control database.
#[derive(Clone, Default)]
pub struct Anchors {
    pub tsa: Option<TimestampAuthority>,
    pub witness: Option<WitnessFile>,
}

/// Largest timestamp response accepted, in bytes (a response with the TSA's certificate
/// is a few kilobytes).
const MAX_RESPONSE: usize = 64 * 1024;

/// Checkpoints sent per attempt.
const PER_ATTEMPT: i64 = 16;

/// A configured RFC 3161 timestamp authority.
#[derive(Clone)]
pub struct TimestampAuthority {
    url: String,
    client: reqwest::Client,
}

/// Why a timestamp was not obtained.
#[derive(Debug, thiserror::Error)]
pub enum AnchorError {
    #[error("the timestamp authority could not be reached: {0}")]
    Unreachable(String),
    #[error("the timestamp authority answered HTTP {0}")]
    Status(u16),
    #[error("the timestamp response is larger than {MAX_RESPONSE} bytes")]
    TooLarge,
    #[error(transparent)]
    Response(#[from] timestamp::TimestampError),
    #[error(transparent)]
    Control(#[from] ControlError),
}

impl TimestampAuthority {
    /// The authority at `url` (http or https), or none for an empty URL.
    pub fn new(url: &str, timeout: Duration) -> Result<Option<Self>, String> {
        let url = url.trim();
        if url.is_empty() {
            return Ok(None);
        }
        let parsed =
            reqwest::Url::parse(url).map_err(|e| format!("audit.timestamp_url {url:?}: {e}"))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(format!(
                "audit.timestamp_url {url:?}: only http and https are supported"
            ));
        }
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Some(TimestampAuthority {
            url: url.to_string(),
            client,
        }))
    }

    /// A checked timestamp of `note`: the DER response and the time it vouches for.
    pub async fn timestamp(&self, note: &str) -> Result<(Vec<u8>, DateTime<Utc>), AnchorError> {
        let nonce: u64 = rand::random();
        let body = timestamp::request(note, nonce)?;
        let mut answer = self
            .client
            .post(&self.url)
            .header("Content-Type", "application/timestamp-query")
            .header("Accept", "application/timestamp-reply")
            .body(body)
            .send()
            .await
            .map_err(|e| AnchorError::Unreachable(e.to_string()))?;
        if !answer.status().is_success() {
            return Err(AnchorError::Status(answer.status().as_u16()));
        }
        let mut der = Vec::new();
        while let Some(chunk) = answer
            .chunk()
            .await
            .map_err(|e| AnchorError::Unreachable(e.to_string()))?
        {
            if der.len() + chunk.len() > MAX_RESPONSE {
                return Err(AnchorError::TooLarge);
            }
            der.extend_from_slice(&chunk);
        }
        let at = timestamp::check(&der, note, Some(nonce))?;
        Ok((der, at))
    }
}

/// Sends every checkpoint still without a timestamp to `tsa`; returns how many were
/// timestamped. A checkpoint that fails keeps its error and is tried again next time.
pub async fn anchor_pending(
    pool: &ControlPool,
    tsa: &TimestampAuthority,
) -> Result<usize, ControlError> {
    let mut done = 0;
    for (size, note) in ledger::unanchored(pool, PER_ATTEMPT).await? {
        match tsa.timestamp(&note).await {
            Ok((der, at)) => {
                ledger::set_timestamp(pool, size, &der, at).await?;
                metrics::counter!("interlock_audit_timestamps_total").increment(1);
                done += 1;
            }
            Err(e) => {
                metrics::counter!("interlock_audit_timestamp_failures_total").increment(1);
                tracing::warn!(tree_size = size, error = %e, "the audit checkpoint could not be timestamped; retrying at the next interval");
                ledger::set_timestamp_error(pool, size, &e.to_string()).await?;
                break;
            }
        }
    }
    Ok(done)
}

/// Signs a checkpoint of the whole log now and tries to timestamp what is pending. A
/// checkpoint this call stored is published on `events` (`audit.checkpoint`, which
/// webhooks deliver to external witnesses).
pub async fn checkpoint_now(
    pool: &ControlPool,
    key: &CheckpointKey,
    anchors: &Anchors,
    events: Option<&EventBus>,
) -> Result<Option<StoredCheckpoint>, ControlError> {
    let Some(made) = ledger::checkpoint(pool, key).await? else {
        return Ok(None);
    };
    if let Some(w) = &anchors.witness {
        w.witness(pool).await;
    }
    if made.new {
        if let Some(events) = events {
            events.publish(Event::AuditCheckpoint {
                tree_size: made.checkpoint.tree_size,
                root_hash: made.checkpoint.root_hash.clone(),
                note: made.checkpoint.note.clone(),
                at: made.checkpoint.created_at,
            });
        }
    }
    if let Some(tsa) = &anchors.tsa {
        anchor_pending(pool, tsa).await?;
        return ledger::at_size(pool, made.checkpoint.tree_size.unsigned_abs()).await;
    }
    Ok(Some(made.checkpoint))
}

/// What this replica's scheduled checkpoints last did, for `/readyz`.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct AnchoringStatus {
    /// The size of the latest checkpoint this replica made or found.
    pub last_checkpoint: Option<i64>,
    /// Whether that checkpoint still waits for its timestamp.
    pub timestamp_pending: bool,
    /// The last failure (checkpoint or timestamp), cleared by the next success.
    pub last_error: Option<String>,
    /// Why the witness file is behind, when it is (`audit.witness_file`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness_error: Option<String>,
}

/// Shared view of [`AnchoringStatus`].
pub type AnchoringState = Arc<std::sync::RwLock<AnchoringStatus>>;

/// Signs (and timestamps) a checkpoint every `every` while the gateway runs; nothing when
/// `every` is zero. `status` is updated after each attempt.
pub fn spawn(
    pool: ControlPool,
    key: Arc<CheckpointKey>,
    anchors: Anchors,
    every: Duration,
    status: AnchoringState,
    events: EventBus,
    stop: &CancellationToken,
) {
    if every.is_zero() {
        return;
    }
    tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let witness_error = || anchors.witness.as_ref().and_then(WitnessFile::last_error);
            let now = match checkpoint_now(&pool, &key, &anchors, Some(&events)).await {
                Ok(Some(c)) => {
                    metrics::gauge!("interlock_audit_checkpoint_size").set(c.tree_size as f64);
                    let pending = anchors.tsa.is_some() && c.timestamp.is_none();
                    AnchoringStatus {
                        last_checkpoint: Some(c.tree_size),
                        timestamp_pending: pending,
                        last_error: c.timestamp_error.filter(|_| pending),
                        witness_error: witness_error(),
                    }
                }
                Ok(None) => AnchoringStatus::default(),
                Err(e) => {
                    metrics::counter!("interlock_audit_checkpoint_failures_total").increment(1);
                    tracing::warn!(error = %e, "the audit checkpoint could not be made; retrying at the next interval");
                    let previous = status.read().map(|s| s.clone()).unwrap_or_default();
                    AnchoringStatus {
                        last_error: Some(e.to_string()),
                        ..previous
                    }
                }
            };
            if let Ok(mut s) = status.write() {
                *s = now;
            }
        }
    }));
}
