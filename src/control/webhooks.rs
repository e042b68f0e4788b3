//! The webhook tables (migration 0007): endpoints, and the delivery outbox.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use tokio_postgres::GenericClient;
use uuid::Uuid;

use super::{ControlError, ControlPool};

/// A registered endpoint (its secret is only shown when it is created).
#[derive(Debug, Clone, Serialize)]
pub struct Webhook {
    pub id: Uuid,
    pub url: String,
    pub events: Vec<String>,
    pub format: String,
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub pending: i64,
    pub delivered: i64,
    pub failed: i64,
    /// Since when deliveries wait (`None`: delivering).
    pub paused_at: Option<DateTime<Utc>>,
    /// Until when deliveries are also signed with the secret before the last rotation.
    pub previous_until: Option<DateTime<Utc>>,
}

pub async fn create(
    pool: &ControlPool,
    url: &str,
    events: &[String],
    secret: &str,
    format: &str,
    by: &str,
) -> Result<Uuid, ControlError> {
    let id = Uuid::new_v4();
    pool.get()
        .await?
        .execute(
            "INSERT INTO webhooks (id, url, events, secret, format, created_by) VALUES ($1, $2, $3, $4, $5, $6)",
            &[&id, &url, &events, &secret, &format, &by],
        )
        .await?;
    Ok(id)
}

pub async fn list(pool: &ControlPool) -> Result<Vec<Webhook>, ControlError> {
    let rows = pool
        .get()
        .await?
        .query(
            "SELECT w.id, w.url, w.events, w.format, w.created_by, w.created_at,
                    count(d.id) FILTER (WHERE d.delivered_at IS NULL AND d.gave_up_at IS NULL),
                    count(d.id) FILTER (WHERE d.delivered_at IS NOT NULL),
                    count(d.id) FILTER (WHERE d.gave_up_at IS NOT NULL),
                    w.paused_at, CASE WHEN w.previous_until > now() THEN w.previous_until END
               FROM webhooks w LEFT JOIN webhook_deliveries d ON d.webhook_id = w.id
              GROUP BY w.id ORDER BY w.created_at",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Webhook {
            id: r.get(0),
            url: r.get(1),
            events: r.get(2),
            format: r.get(3),
            created_by: r.get(4),
            created_at: r.get(5),
            pending: r.get(6),
            delivered: r.get(7),
            failed: r.get(8),
            paused_at: r.get(9),
            previous_until: r.get(10),
        })
        .collect())
}

/// Replaces an endpoint's secret with `secret`; the one it replaces still signs deliveries
/// for `grace` (alongside the new one). `None`: no such endpoint.
pub async fn rotate(
    pool: &ControlPool,
    id: Uuid,
    secret: &str,
    grace: chrono::Duration,
) -> Result<Option<DateTime<Utc>>, ControlError> {
    let until = Utc::now() + grace;
    let row = pool
        .get()
        .await?
        .query_opt(
            "UPDATE webhooks SET previous_secret = secret, previous_until = $3, secret = $2
              WHERE id = $1 RETURNING previous_until",
            &[&id, &secret, &until],
        )
        .await?;
    Ok(row.map(|r| r.get(0)))
}

/// Pauses (deliveries wait in the outbox) or resumes an endpoint; false when there is none.
/// On resume, each delivery still owed is credited the time it waited paused (from the
/// later of its event and the pause), so a pause never uses up its 24 hours of retries.
pub async fn set_paused(pool: &ControlPool, id: Uuid, paused: bool) -> Result<bool, ControlError> {
    Ok(pool
        .get()
        .await?
        .execute(
            "WITH endpoint AS (SELECT id, paused_at FROM webhooks WHERE id = $1 FOR UPDATE),
                  credited AS (
                    UPDATE webhook_deliveries d
                       SET held_secs = d.held_secs
                           + extract(epoch FROM now() - greatest(d.created_at, e.paused_at))
                      FROM endpoint e
                     WHERE NOT $2 AND e.paused_at IS NOT NULL AND d.webhook_id = e.id
                       AND d.delivered_at IS NULL AND d.gave_up_at IS NULL)
             UPDATE webhooks w SET paused_at = CASE WHEN $2 THEN coalesce(w.paused_at, now()) END
               FROM endpoint e WHERE w.id = e.id",
            &[&id, &paused],
        )
        .await?
        == 1)
}

/// Deletes an endpoint and its deliveries; false when there was none.
pub async fn delete(pool: &ControlPool, id: Uuid) -> Result<bool, ControlError> {
    Ok(pool
        .get()
        .await?
        .execute("DELETE FROM webhooks WHERE id = $1", &[&id])
        .await?
        == 1)
}

/// Puts `event` in the outbox of every endpoint subscribed to it (or of `only`); returns
/// how many deliveries were queued.
pub async fn enqueue(
    pool: &ControlPool,
    event: &str,
    payload: &Value,
    only: Option<Uuid>,
) -> Result<u64, ControlError> {
    Ok(pool
        .get()
        .await?
        .execute(
            "INSERT INTO webhook_deliveries (id, webhook_id, event, payload)
             SELECT gen_random_uuid(), id, $1, $2 FROM webhooks
              WHERE ($3::uuid IS NULL AND $1 = ANY (events)) OR id = $3",
            &[&event, payload, &only],
        )
        .await?)
}

/// A delivery claimed for one attempt.
#[derive(Debug, Clone)]
pub struct Due {
    pub id: Uuid,
    pub event: String,
    pub payload: Value,
    /// Where its 24 hours of retries count from: the event, later by the time its endpoint
    /// was paused.
    pub retries_from: DateTime<Utc>,
    pub attempts: i32,
    pub url: String,
    pub secret: String,
    /// The secret before the last rotation, while it still signs.
    pub previous_secret: Option<String>,
    pub format: String,
}

/// Claims up to `limit` due deliveries for `lease_secs` (another replica takes them over
/// only after the lease, so each attempt is made by one replica).
pub async fn claim_due(
    client: &impl GenericClient,
    limit: i64,
    lease_secs: f64,
) -> Result<Vec<Due>, ControlError> {
    let rows = client
        .query(
            "UPDATE webhook_deliveries d
                SET next_attempt_at = now() + make_interval(secs => $2), attempts = d.attempts + 1
               FROM webhooks w
              WHERE w.id = d.webhook_id AND d.id IN (
                    SELECT o.id FROM webhook_deliveries o JOIN webhooks p ON p.id = o.webhook_id
                     WHERE o.delivered_at IS NULL AND o.gave_up_at IS NULL
                       AND o.next_attempt_at <= now() AND p.paused_at IS NULL
                     ORDER BY o.next_attempt_at LIMIT $1 FOR UPDATE OF o SKIP LOCKED)
             RETURNING d.id, d.event, d.payload, d.created_at + make_interval(secs => d.held_secs),
                       d.attempts, w.url, w.secret, w.format,
                       CASE WHEN w.previous_until > now() THEN w.previous_secret END",
            &[&limit, &lease_secs],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Due {
            id: r.get(0),
            event: r.get(1),
            payload: r.get(2),
            retries_from: r.get(3),
            attempts: r.get(4),
            url: r.get(5),
            secret: r.get(6),
            format: r.get(7),
            previous_secret: r.get(8),
        })
        .collect())
}

/// Attempts kept in a delivery's log (the newest).
pub const ATTEMPTS_KEPT: i32 = 20;

/// One attempt of a delivery, as its log keeps it.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub at: DateTime<Utc>,
    /// The endpoint's HTTP status; `None` when no answer came.
    pub status: Option<u16>,
    pub error: Option<String>,
    pub ms: u64,
}

impl Attempt {
    fn json(&self) -> Value {
        serde_json::json!({"at": self.at, "status": self.status, "error": self.error, "ms": self.ms})
    }
}

/// Appends `attempt` to the log of `id`, keeping the newest [`ATTEMPTS_KEPT`].
const LOGGED: &str = "attempt_log = (SELECT coalesce(jsonb_agg(e ORDER BY n), '[]')
                       FROM jsonb_array_elements(attempt_log || jsonb_build_array($2::jsonb))
                            WITH ORDINALITY AS t(e, n)
                      WHERE n > jsonb_array_length(attempt_log) + 1 - $3)";

pub async fn delivered(
    client: &impl GenericClient,
    id: Uuid,
    attempt: &Attempt,
) -> Result<(), ControlError> {
    client
        .execute(
            &format!(
                "UPDATE webhook_deliveries SET delivered_at = now(), last_error = NULL, {LOGGED}
                  WHERE id = $1"
            ),
            &[&id, &attempt.json(), &ATTEMPTS_KEPT],
        )
        .await?;
    Ok(())
}

/// An attempt failed: try again at `retry_at`, or give up when `None`.
pub async fn attempt_failed(
    client: &impl GenericClient,
    id: Uuid,
    attempt: &Attempt,
    retry_at: Option<DateTime<Utc>>,
) -> Result<(), ControlError> {
    client
        .execute(
            &format!(
                "UPDATE webhook_deliveries
                    SET last_error = $4,
                        next_attempt_at = coalesce($5, next_attempt_at),
                        gave_up_at = CASE WHEN $5::timestamptz IS NULL THEN now() END,
                        {LOGGED}
                  WHERE id = $1"
            ),
            &[
                &id,
                &attempt.json(),
                &ATTEMPTS_KEPT,
                &attempt.error.as_deref().unwrap_or("failed"),
                &retry_at,
            ],
        )
        .await?;
    Ok(())
}

/// The latest deliveries of an endpoint, newest first.
pub async fn deliveries(
    pool: &ControlPool,
    webhook: Uuid,
    limit: i64,
) -> Result<Vec<Value>, ControlError> {
    let rows = pool
        .get()
        .await?
        .query(
            "SELECT json_build_object('id', id, 'event', event, 'created_at', created_at,
                    'attempts', attempts, 'next_attempt_at', next_attempt_at,
                    'delivered_at', delivered_at, 'gave_up_at', gave_up_at, 'last_error', last_error,
                    'attempt_log', attempt_log)
               FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC LIMIT $2",
            &[&webhook, &limit],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}
