//! Delivering the outbox: claim due rows, send each signed, record what happened.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde_json::{json, Value};

use super::{signature, target, Webhooks};
use crate::control::webhooks::{self as outbox, Attempt, Due};

/// How often a replica looks for due deliveries.
const POLL: Duration = Duration::from_millis(500);
/// How long a claimed delivery is this replica's before another may try it.
const LEASE_SECS: f64 = 30.0;
/// How long one attempt may take.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Deliveries are retried for this long after the event (not counting the time their
/// endpoint was paused), then given up.
const GIVE_UP_AFTER_HOURS: i64 = 24;

pub(super) async fn run(hooks: Arc<Webhooks>) {
    loop {
        if let Err(e) = round(&hooks).await {
            tracing::debug!(error = %e, "webhook delivery round skipped");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// An HTTP client that connects to `target` only at the addresses it was checked at.
fn client_for(target: &target::Target) -> Result<reqwest::Client, String> {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .timeout(ATTEMPT_TIMEOUT)
        // A redirect could lead anywhere, including inside: never followed.
        .redirect(reqwest::redirect::Policy::none());
    if let Some((host, addrs)) = &target.pinned {
        builder = builder.resolve_to_addrs(host, addrs);
    }
    builder.build().map_err(|e| format!("no HTTP client: {e}"))
}

async fn round(hooks: &Webhooks) -> Result<(), crate::control::ControlError> {
    let db = hooks.control.get().await?;
    let due = outbox::claim_due(&**db, 16, LEASE_SECS).await?;
    for d in due {
        let at = Utc::now();
        let started = std::time::Instant::now();
        let result = attempt(hooks, &d).await;
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match result {
            Ok(status) => {
                let logged = Attempt {
                    at,
                    status: Some(status),
                    error: None,
                    ms,
                };
                outbox::delivered(&**db, d.id, &logged).await?;
            }
            Err(Failed { status, why }) => {
                let given_up =
                    Utc::now() - d.retries_from >= chrono::Duration::hours(GIVE_UP_AFTER_HOURS);
                let retry_at = (!given_up).then(|| Utc::now() + backoff(d.attempts));
                metrics::counter!("interlock_webhook_failures_total").increment(1);
                tracing::warn!(delivery = %d.id, url = %d.url, attempts = d.attempts, error = %why, "webhook delivery failed");
                let logged = Attempt {
                    at,
                    status,
                    error: Some(why),
                    ms,
                };
                outbox::attempt_failed(&**db, d.id, &logged, retry_at).await?;
            }
        }
    }
    Ok(())
}

/// 1 s after the first failure, doubling, at most an hour.
fn backoff(attempts: i32) -> chrono::Duration {
    let secs = 1_i64 << attempts.clamp(1, 12).saturating_sub(1);
    chrono::Duration::seconds(secs.min(3600))
}

/// Why an attempt did not count as delivered, and the endpoint's status when it answered.
struct Failed {
    status: Option<u16>,
    why: String,
}

impl From<String> for Failed {
    fn from(why: String) -> Self {
        Failed { status: None, why }
    }
}

impl From<&str> for Failed {
    fn from(why: &str) -> Self {
        Failed::from(why.to_string())
    }
}

/// One signed POST: the endpoint's success status, or why it did not count as delivered.
async fn attempt(hooks: &Webhooks, d: &Due) -> Result<u16, Failed> {
    let target = target::check(&d.url, hooks.allow_private).await?;
    let client = client_for(&target)?;
    let body = match d.format.as_str() {
        "slack" => slack(&d.event, &d.payload, &hooks.console_url),
        _ => d.payload.clone(),
    };
    let body = serde_json::to_vec(&body).map_err(|e| Failed::from(e.to_string()))?;
    let id = d.id.to_string();
    let timestamp = Utc::now().timestamp();
    // After a rotation, signed with both secrets until the previous one's grace ends.
    let mut signature = signature::sign(&d.secret, &id, timestamp, &body)
        .ok_or("the endpoint's secret is unusable")?;
    if let Some(previous) = d
        .previous_secret
        .as_deref()
        .and_then(|p| signature::sign(p, &id, timestamp, &body))
    {
        signature = format!("{signature} {previous}");
    }
    let res = client
        .post(target.url)
        .header("content-type", "application/json")
        .header("webhook-id", &id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body)
        .send()
        .await
        .map_err(|e| Failed::from(format!("not delivered: {e}")))?;
    let status = res.status().as_u16();
    if res.status().is_success() {
        Ok(status)
    } else {
        Err(Failed {
            status: Some(status),
            why: format!("the endpoint answered HTTP {status}"),
        })
    }
}

/// A Slack-compatible message: a one-line summary and, when configured, a console link.
fn slack(event: &str, payload: &Value, console_url: &str) -> Value {
    let d = &payload["data"];
    let s = |k: &str| d[k].as_str().unwrap_or("?").to_string();
    let short = s("id").chars().take(8).collect::<String>();
    let summary = match event {
        "approval.created" => format!(
            "A write on `{}` from {} waits for approval (#{short})",
            s("source"),
            s("requester")
        ),
        "approval.decided" => format!(
            "{} decided #{short} on `{}`: {} (now {})",
            s("approver"),
            s("source"),
            s("decision"),
            s("state")
        ),
        "approval.executed" | "approval.failed" => {
            format!("Write #{short} on `{}`: {}", s("source"), s("state"))
        }
        "approval.expired" => format!("Write #{short} on `{}` expired undecided", s("source")),
        "approval.returned" => format!(
            "Write #{short} on `{}` changed {} rows when approved, more than the {} estimated: rolled back, waiting for approval again",
            s("source"),
            d["measured"],
            d["estimated"]
        ),
        "approval.withdrawn" => format!(
            "{} withdrew #{short} on `{}` before it was decided",
            s("requester"),
            s("source")
        ),
        "circuit.changed" => format!(
            "Circuit of `{}`: {} → {} ({})",
            s("source"),
            s("from"),
            s("to"),
            s("reason")
        ),
        "audit.checkpoint" => format!(
            "Audit log checkpoint: {} records, root {}",
            d["tree_size"],
            s("root_hash")
        ),
        other => format!("InterLock event {other}"),
    };
    let text = if console_url.is_empty() {
        summary
    } else {
        format!("{summary} — <{console_url}|open the console>")
    };
    json!({"text": text})
}

#[cfg(test)]
mod tests {
    use super::{backoff, slack};
    use serde_json::json;

    #[test]
    fn backoff_doubles_up_to_an_hour() {
        let secs: Vec<i64> = [1, 2, 3, 4, 12, 40]
            .iter()
            .map(|a| backoff(*a).num_seconds())
            .collect();
        assert_eq!(secs, vec![1, 2, 4, 8, 2048, 2048]);
    }

    #[test]
    fn slack_messages_summarize_the_event() {
        let created =
            json!({"data": {"id": "0123456789", "source": "shop", "requester": "demo-agent"}});
        assert_eq!(
            slack("approval.created", &created, "https://c.example/console")["text"],
            "A write on `shop` from demo-agent waits for approval (#01234567) — <https://c.example/console|open the console>"
        );
        assert_eq!(
            slack("approval.expired", &created, "")["text"],
            "Write #01234567 on `shop` expired undecided"
        );
    }
}
