//! `GET /admin/activity?since=&until=&bucket=&source=&sources=` (operators): what the fleet's calls
//! did over time, per source and for the fleet, from every replica's minutes
//! (`crate::activity`): calls by outcome, refusals by code, p50/p99 latency, cache hit
//! ratio, cost admissions, and the busiest identities of the window; each circuit
//! transition with its cause; approvals created, decided and pending.

use std::collections::BTreeMap;

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::{control_error, error, Admin, Operators};
use super::chart_window::chart_window;
use crate::activity::minute::{Minute, Talker, OTHERS};
use crate::AppState;

/// Identities listed among the top talkers.
const TOP_TALKERS: usize = 20;
/// Circuit transitions listed, newest first.
const TRANSITIONS: i64 = 1_000;

#[derive(Debug, Deserialize)]
pub struct ActivityQuery {
    /// An RFC 3339 instant or a span back from now (default `6h`).
    since: Option<String>,
    until: Option<DateTime<Utc>>,
    /// Bucket width in seconds, a whole number of minutes (default: the window in 48
    /// buckets, at least 60 s).
    bucket: Option<u32>,
    /// One source (default: every source, and the fleet).
    source: Option<String>,
    /// `buckets` (default): each source's buckets whole; `summary`: each source's totals for
    /// the window and a strip of calls per bucket, what a table of many sources shows (a
    /// source's buckets are asked for when it is charted, with `source`).
    sources: Option<String>,
}

pub async fn activity(
    _caller: Admin<Operators>,
    q: web::Query<ActivityQuery>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let (since, until, bucket) =
        match chart_window(q.since.as_deref(), q.until, q.bucket, Utc::now(), "6h", 60) {
            Ok(w) => w,
            Err(m) => return error(StatusCode::BAD_REQUEST, "invalid", &m),
        };
    let summary = match q.sources.as_deref() {
        None | Some("buckets") => false,
        Some("summary") => true,
        Some(other) => {
            let m = format!("sources {other:?} must be buckets or summary");
            return error(StatusCode::BAD_REQUEST, "invalid", &m);
        }
    };
    let since = crate::activity::minute_of(since);
    let stored =
        match crate::control::activity::window(&state.control, since, until, q.source.as_deref())
            .await
        {
            Ok(rows) => rows,
            Err(e) => return control_error(e),
        };
    // Parsing and merging a day of a large fleet's minutes takes a while: off the workers.
    let Ok((per_source, fleet, window)) = web::block(move || merged(stored, since, bucket)).await
    else {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "failed",
            "the activity could not be merged",
        );
    };
    let control = &state.control;
    let source = q.source.as_deref();
    let transitions =
        match crate::control::activity::transitions(control, since, until, source, TRANSITIONS)
            .await
        {
            Ok(t) => t,
            Err(e) => return control_error(e),
        };
    let (queued, decided) =
        match crate::control::activity::approvals_in(control, since, until, source).await {
            Ok(a) => a,
            Err(e) => return control_error(e),
        };
    let n = usize::try_from((until - since).num_seconds() / i64::from(bucket) + 1).unwrap_or(0);
    let width = chrono::Duration::seconds(i64::from(bucket));
    let approvals: Vec<Value> =
        crate::activity::approval_buckets(since, width, n, &queued, &decided)
            .into_iter()
            .filter(|(at, ..)| *at < until)
            .map(|(at, created, decided, pending)| {
                json!({"at": at, "created": created, "decided": decided, "pending": pending})
            })
            .collect();
    let sources: Vec<Value> = per_source
        .iter()
        .map(|(source, buckets)| {
            let name = (!source.is_empty()).then_some(source.as_str());
            if summary {
                source_summary(name, buckets, since, until, bucket)
            } else {
                json!({
                    "source": name,
                    "buckets": buckets.iter().map(|(at, m)| bucket_json(*at, m)).collect::<Vec<_>>(),
                })
            }
        })
        .collect();
    HttpResponse::Ok().json(json!({
        "since": since,
        "until": until,
        "bucket_secs": bucket,
        // How far back the minutes reach, and how far behind the newest may be.
        "retain_hours": state.settings.activity.retain_hours,
        "flush_interval_ms": state.settings.activity.flush_interval_ms,
        "fleet": fleet.iter().map(|(at, m)| bucket_json(*at, m)).collect::<Vec<_>>(),
        "sources": sources,
        "top_talkers": top_talkers(&window.identities),
        // The newest TRANSITIONS only: the window may hold more.
        "circuit_truncated": i64::try_from(transitions.len()).unwrap_or(i64::MAX) >= TRANSITIONS,
        "circuit": transitions,
        "approvals": approvals,
    }))
}

/// Minutes per source, per fleet bucket, and for the whole window.
type Merged = (
    BTreeMap<String, BTreeMap<DateTime<Utc>, Minute>>,
    BTreeMap<DateTime<Utc>, Minute>,
    Minute,
);

/// The stored minutes merged into buckets of `bucket` s from `since`: per source (replicas
/// and minutes alike), for the fleet, and for the whole window.
fn merged(
    stored: Vec<crate::control::activity::StoredMinute>,
    since: DateTime<Utc>,
    bucket: u32,
) -> Merged {
    // (source, bucket start) → the bucket's minutes merged, replicas and minutes alike.
    let mut per_source: BTreeMap<String, BTreeMap<DateTime<Utc>, Minute>> = BTreeMap::new();
    for row in stored {
        let Ok(minute) = serde_json::from_str::<Minute>(&row.data) else {
            continue;
        };
        let offset = (row.minute - since).num_seconds() / i64::from(bucket);
        let at = since + chrono::Duration::seconds(offset * i64::from(bucket));
        per_source
            .entry(row.source_id)
            .or_default()
            .entry(at)
            .or_default()
            .merge(&minute);
    }
    // The fleet's buckets from the sources' (not from every minute again), the window's
    // totals from the fleet's.
    let mut fleet: BTreeMap<DateTime<Utc>, Minute> = BTreeMap::new();
    for buckets in per_source.values() {
        for (at, m) in buckets {
            fleet.entry(*at).or_default().merge(m);
        }
    }
    let mut window = Minute::default();
    for m in fleet.values() {
        window.merge(m);
    }
    (per_source, fleet, window)
}

fn bucket_json(at: DateTime<Utc>, m: &Minute) -> Value {
    json!({
        "at": at,
        "calls": m.calls(),
        "ok": m.ok,
        "refused": m.refused,
        "queued": m.queued,
        "unavailable": m.unavailable,
        "cancelled": m.cancelled,
        "refused_by_code": m.refused_by_code,
        "p50_ms": m.latency_ms(0.5),
        "p99_ms": m.latency_ms(0.99),
        "cache_hits": m.cache_hits,
        "cache_misses": m.cache_misses,
        "cache_hit_ratio": m.cache_hit_ratio(),
        "cost": m.cost,
        "cost_units_admitted": m.cost_units_admitted,
    })
}

/// One source's window in brief: its totals (latency percentiles of the whole window), when
/// it was first unavailable, and a strip: per bucket of the window (the `i`th starts at
/// `since + i × bucket_secs`), its calls and how many of them failed (refused or
/// unavailable), as two arrays of numbers.
fn source_summary(
    source: Option<&str>,
    buckets: &BTreeMap<DateTime<Utc>, Minute>,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    bucket: u32,
) -> Value {
    let mut window = Minute::default();
    for m in buckets.values() {
        window.merge(m);
    }
    let first_unavailable = buckets
        .iter()
        .find(|(_, m)| m.unavailable > 0)
        .map(|(at, _)| *at);
    let width = i64::from(bucket.max(1));
    let slots = usize::try_from(((until - since).num_seconds() + width - 1) / width)
        .unwrap_or(0)
        .max(1);
    let (mut calls, mut failed) = (vec![0u64; slots], vec![0u64; slots]);
    for (at, m) in buckets {
        let slot = usize::try_from((*at - since).num_seconds() / width).unwrap_or(0);
        if let (Some(c), Some(f)) = (calls.get_mut(slot), failed.get_mut(slot)) {
            *c += m.calls();
            *f += m.refused + m.unavailable;
        }
    }
    json!({
        "source": source,
        "totals": {
            "calls": window.calls(),
            "ok": window.ok,
            "refused": window.refused,
            "queued": window.queued,
            "unavailable": window.unavailable,
            "cancelled": window.cancelled,
            "p50_ms": window.latency_ms(0.5),
            "p99_ms": window.latency_ms(0.99),
            "cache_hits": window.cache_hits,
            "cache_misses": window.cache_misses,
        },
        "first_unavailable": first_unavailable,
        "strip": {"calls": calls, "failed": failed},
    })
}

/// The busiest identities of the window, most calls first (identities beyond each minute's
/// bound are counted together as `(others)`, listed last).
fn top_talkers(identities: &BTreeMap<String, Talker>) -> Vec<Value> {
    let mut all: Vec<(&String, &Talker)> = identities.iter().collect();
    all.sort_by(|a, b| {
        (a.0 == OTHERS)
            .cmp(&(b.0 == OTHERS))
            .then(b.1.calls.cmp(&a.1.calls))
            .then(a.0.cmp(b.0))
    });
    all.into_iter()
        .take(TOP_TALKERS)
        .map(|(identity, t)| {
            json!({"identity": identity, "calls": t.calls, "refused": t.refused, "queued": t.queued})
        })
        .collect()
}
