//! Audit of the refusals decided before the governed pipeline: a bad Host or
//! Origin, an admin call without an approver or operator key (or with an
//! agent's), a JSON-RPC message the protocol layer refuses (an unknown tool,
//! arguments that fail the schema, a bad header). Probing is visible in the
//! audit log like every governed call.
//!
//! A refusal whose caller is known (a valid key) is one record. Refusals
//! without a known caller are aggregated per (peer address, refusal code) over
//! a window: the first of each window is written at once, the rest are counted
//! and written as one record carrying the count when the window ends (a
//! background flush, so the count of a flood's last window is not lost). An
//! unauthenticated flood therefore adds at most two records per peer, code and
//! window to the audit table.

use std::net::IpAddr;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use dashmap::DashMap;
use interlock_actors::audit::{AuditHandle, AuditRecord, RecordOutcome};
use serde_json::json;

use crate::control::identities::Identity;
use crate::pipeline::identity::{bearer, IdentityResolver, Resolved};

/// The caller behind an `Authorization` header, when its key or token is valid.
pub async fn caller(
    identities: &IdentityResolver,
    authorization: Option<&str>,
) -> Option<Arc<Identity>> {
    let credential = bearer(authorization)?;
    match identities.resolve_bearer(credential).await {
        Ok(Resolved::Caller(p)) => Some(Arc::clone(&p.identity)),
        _ => None,
    }
}

/// One refusal to audit.
#[derive(Debug, Clone)]
pub struct EarlyRefusal {
    pub request_id: String,
    /// `mcp`, `admin`, `proxy`, `mcp-legacy`, or `edge` for the route guard.
    pub adapter: &'static str,
    /// What was asked: the JSON-RPC method and tool, or `METHOD /path`.
    pub target: String,
    pub code: String,
    pub step: &'static str,
    pub rule: &'static str,
    pub reason: String,
    pub status: u16,
    pub peer: Option<IpAddr>,
}

struct Window {
    started: Instant,
    suppressed: u64,
    /// The first refusal counted, as the template of the summary record.
    last: Option<EarlyRefusal>,
}

/// The auditor; one per gateway.
pub struct RefusalAudit {
    audit: AuditHandle,
    window: Duration,
    windows: DashMap<(Option<IpAddr>, String), Window>,
}

impl RefusalAudit {
    /// Starts the auditor and its flush task on the current runtime.
    pub fn start(audit: AuditHandle, window: Duration, stop: &CancellationToken) -> Arc<Self> {
        let auditor = Arc::new(RefusalAudit {
            audit,
            window,
            windows: DashMap::new(),
        });
        let weak: Weak<Self> = Arc::downgrade(&auditor);
        tokio::spawn(stop.clone().run_until_cancelled_owned(async move {
            let mut tick = tokio::time::interval(window.max(Duration::from_millis(100)));
            loop {
                tick.tick().await;
                let Some(auditor) = weak.upgrade() else {
                    return;
                };
                auditor.flush();
            }
        }));
        auditor
    }

    /// Records `refusal`; `caller` is the identity when the key was valid.
    pub fn record(&self, refusal: EarlyRefusal, caller: Option<&Identity>) {
        if let Some(identity) = caller {
            self.write(refusal, Some(identity), 1);
            return;
        }
        let key = (refusal.peer, refusal.code.clone());
        let now = Instant::now();
        let mut first = false;
        let mut expired: Option<(EarlyRefusal, u64)> = None;
        {
            let mut entry = self.windows.entry(key).or_insert_with(|| {
                first = true;
                Window {
                    started: now,
                    suppressed: 0,
                    last: None,
                }
            });
            if !first && now.duration_since(entry.started) >= self.window {
                if let (Some(last), n) = (entry.last.take(), entry.suppressed) {
                    if n > 0 {
                        expired = Some((last, n));
                    }
                }
                entry.started = now;
                entry.suppressed = 0;
                first = true;
            }
            if !first {
                entry.suppressed += 1;
                // The summary's template: the first refusal counted in this window.
                if entry.last.is_none() {
                    entry.last = Some(refusal.clone());
                }
            }
        }
        if let Some((last, n)) = expired {
            self.write(last, None, n);
        }
        if first {
            self.write(refusal, None, 1);
        }
    }

    /// Writes the counts of windows that have ended.
    fn flush(&self) {
        let now = Instant::now();
        let mut due = Vec::new();
        self.windows.retain(|_, w| {
            let ended = now.duration_since(w.started) >= self.window;
            if ended {
                if let Some(last) = w.last.take() {
                    if w.suppressed > 0 {
                        due.push((last, w.suppressed));
                    }
                }
            }
            !ended
        });
        for (refusal, count) in due {
            self.write(refusal, None, count);
        }
    }

    fn write(&self, r: EarlyRefusal, caller: Option<&Identity>, count: u64) {
        metrics::counter!("interlock_refusals_before_pipeline_total", "code" => r.code.clone())
            .increment(count);
        let record = AuditRecord {
            at: chrono::Utc::now(),
            request_id: r.request_id,
            identity_id: caller.map(|i| i.id),
            identity: caller.map(|i| i.name.clone()),
            adapter: r.adapter.to_string(),
            dialect: None,
            tool: r.target,
            source_id: None,
            action: None,
            statement: None,
            fingerprint: None,
            decision: json!({
                "verdict": "refuse",
                "step": r.step,
                "code": r.code,
                "rule": r.rule,
                "reason": r.reason,
                "status": r.status,
                "peer": r.peer.map(|p| p.to_string()),
                "count": count,
                "window_ms": u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX),
            }),
            outcome: RecordOutcome::Refused,
            row_count: None,
            duration_us: 0,
            cache_hit: false,
            approval_id: None,
            statement_sha256: None,
        };
        let audit = self.audit.clone();
        // The refusal is answered at once; its record follows (it carries no data).
        tokio::spawn(async move {
            if let Err(e) = audit.append(record).await {
                tracing::warn!(error = %e, "a refusal could not be audited");
            }
        });
    }
}
