//! Trying policy before applying it, for operators and the console:
//! `POST /admin/policy/simulate` replays recorded calls under a candidate access file,
//! `POST /admin/policy/explain` explains one call rule by rule (`crate::policy_lab`),
//! `GET /admin/policy/reported` charts report-only rules over time.

use actix_web::http::StatusCode;
use actix_web::{web, HttpResponse};
use serde::Deserialize;

use super::auth::{control_error, error, Admin, Operators};
use super::chart_window::chart_window;
use crate::control::audit::ReplayFilter;
use crate::control::policy_file::AccessFile;
use crate::pipeline::Ports;
use crate::policy_lab::explain::{explain as explain_call, ExplainError, ExplainRequest};
use crate::policy_lab::replay::{parse_since, simulate as replay, Scope};
use crate::AppState;

/// Most records one simulation replays.
const MAX_RECORDS: u64 = 1_000_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulateRequest {
    /// The candidate access file (TOML), as `policy apply` takes it.
    file: String,
    /// An RFC 3339 instant or a span back from now (`7d`, `12h`, …).
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    until: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    identity: Option<String>,
    /// Most records to replay (default 100 000).
    #[serde(default)]
    limit: Option<u64>,
    /// Examples shown per kind of change (default 5).
    #[serde(default)]
    examples: Option<usize>,
}

pub async fn simulate(
    _caller: Admin<Operators>,
    body: web::Json<SimulateRequest>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let req = body.into_inner();
    let file = match AccessFile::parse(&req.file) {
        Ok(f) => f,
        Err(e) => return control_error(e),
    };
    let since = match req
        .since
        .as_deref()
        .map(|s| parse_since(s, state.policy_now()))
    {
        Some(Err(m)) => return error(StatusCode::BAD_REQUEST, "invalid", &m),
        Some(Ok(t)) => Some(t),
        None => None,
    };
    let limit = req.limit.unwrap_or(100_000);
    if !(1..=MAX_RECORDS).contains(&limit) {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid",
            &format!("limit {limit} must be between 1 and {MAX_RECORDS}"),
        );
    }
    let scope = Scope {
        filter: ReplayFilter {
            since,
            until: req.until,
            source: req.source,
            identity: req.identity,
        },
        limit,
        examples_per_kind: req.examples.unwrap_or(5).min(100),
    };
    match replay(state.get_ref(), &file, &scope).await {
        Ok(report) => HttpResponse::Ok().json(report),
        Err(e) => control_error(e),
    }
}

pub async fn explain(
    _caller: Admin<Operators>,
    body: web::Json<ExplainRequest>,
    state: web::Data<AppState>,
) -> HttpResponse {
    match explain_call(state.get_ref(), &body).await {
        Ok(x) => HttpResponse::Ok().json(x),
        Err(ExplainError::NotFound(m)) => error(StatusCode::NOT_FOUND, "not_found", &m),
        Err(ExplainError::Invalid(m)) => error(StatusCode::BAD_REQUEST, "invalid", &m),
        Err(ExplainError::Control(e)) => control_error(e),
    }
}

#[derive(Debug, Deserialize)]
pub struct ReportedQuery {
    /// An RFC 3339 instant or a span back from now (default `24h`).
    since: Option<String>,
    until: Option<chrono::DateTime<chrono::Utc>>,
    /// Bucket width in seconds, a whole number of minutes (default: the window in 48
    /// buckets, at least 60 s).
    bucket: Option<u32>,
    source: Option<String>,
}

pub async fn reported(
    _caller: Admin<Operators>,
    q: web::Query<ReportedQuery>,
    state: web::Data<AppState>,
) -> HttpResponse {
    let (since, until, bucket) = match chart_window(
        q.since.as_deref(),
        q.until,
        q.bucket,
        state.policy_now(),
        "24h",
        60,
    ) {
        Ok(w) => w,
        Err(m) => return error(StatusCode::BAD_REQUEST, "invalid", &m),
    };
    // The counts are per minute: the window is whole minutes, the one holding `until`
    // included.
    let since = crate::activity::minute_of(since);
    let until = crate::activity::minute_of(until - chrono::Duration::nanoseconds(1))
        + chrono::Duration::minutes(1);
    match crate::control::policy_reports::report_only_series(
        &state.control,
        since,
        until,
        bucket,
        q.source.as_deref(),
    )
    .await
    {
        Ok(rules) => HttpResponse::Ok().json(serde_json::json!({
            "since": since, "until": until, "bucket_secs": bucket, "rules": rules,
        })),
        Err(e) => control_error(e),
    }
}
