//! `policy simulate`: recorded governed queries decided again under a candidate access
//! file laid over the live access state, compared with what the gateway did. It reads the
//! control database (one snapshot of the access state, the audit log page by page) and the
//! sources' catalogs as the gateway holds them; it writes nothing.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::judge::{Judge, Judged, RecordedCall};
use super::report::Report;
use crate::call::audit::fingerprint;
use crate::call::replay_basis::ReplayBasis;
use crate::control::access_snapshot::AccessSnapshot;
use crate::control::audit::{replayable_page, ReplayFilter, ReplayableRecord};
use crate::control::policy_file::AccessFile;
use crate::control::sources::{Source, SourceKind};
use crate::control::ControlError;
use crate::governance::{AccessProfile, SqlLimits};
use crate::pipeline::Ports;
use crate::sources::registry::CatalogSnapshot;
use crate::sql::memo::{ShapeMemo, DEFAULT_MEMO_BYTES};

/// Records read per page of the audit log.
const PAGE: i64 = 2_000;

/// Which records to replay and how much to show.
#[derive(Debug, Clone)]
pub struct Scope {
    pub filter: ReplayFilter,
    /// Most records to replay (the report says when more matched).
    pub limit: u64,
    pub examples_per_kind: usize,
}

/// A source's part of a replay.
struct SourceCtx {
    source: Source,
    catalog: Arc<CatalogSnapshot>,
    memo: ShapeMemo,
}

/// The state a replay carries from page to page (moved into a blocking task per page, so
/// deciding thousands of statements never holds up the gateway's request threads).
struct Replay {
    live: Arc<AccessSnapshot>,
    tried: Arc<AccessSnapshot>,
    limits: SqlLimits,
    sources: HashMap<String, Result<SourceCtx, &'static str>>,
    /// (identity, source) → (live profile, candidate profile).
    profiles: HashMap<(String, String), Result<Profiles, String>>,
    report: Report,
    examples_per_kind: usize,
}

struct Profiles {
    live: Option<AccessProfile>,
    tried: Option<AccessProfile>,
    /// The candidate leaves this caller's profile as it is: one decision serves both.
    same: bool,
}

/// Replays the calls `scope` selects under `candidate`; refused (with `policy apply`'s own
/// error) when `policy apply` would refuse the file.
pub async fn simulate(
    ports: &impl Ports,
    candidate: &AccessFile,
    scope: &Scope,
) -> Result<Report, ControlError> {
    let started = Instant::now();
    let live = AccessSnapshot::load(ports.control()).await?;
    let tried = live.with_file(candidate)?;
    let mut replay = Replay {
        live: Arc::new(live),
        tried: Arc::new(tried),
        limits: ports.sql_limits(),
        sources: HashMap::new(),
        profiles: HashMap::new(),
        report: Report::default(),
        examples_per_kind: scope.examples_per_kind,
    };
    let mut after = 0;
    let mut left = scope.limit;
    loop {
        let want = i64::try_from(left.min(PAGE as u64)).unwrap_or(PAGE);
        if want == 0 {
            // The limit is reached: is there more?
            let more = replayable_page(ports.control(), &scope.filter, after, 1).await?;
            replay.report.truncated = !more.is_empty();
            break;
        }
        let page = replayable_page(ports.control(), &scope.filter, after, want).await?;
        let Some(last) = page.last() else { break };
        after = last.seq;
        left -= page.len() as u64;
        for record in &page {
            if !replay.sources.contains_key(&record.source) {
                let ctx = source_ctx(ports, &record.source).await;
                replay.sources.insert(record.source.clone(), ctx);
            }
        }
        let full = page.len() as i64 == want;
        replay = tokio::task::spawn_blocking(move || {
            replay.page(page);
            replay
        })
        .await
        .map_err(|e| ControlError::Invalid(format!("the replay failed: {e}")))?;
        if !full {
            break;
        }
    }
    let mut report = replay.report;
    let secs = started.elapsed().as_secs_f64();
    report.elapsed_ms = secs * 1000.0;
    report.records_per_second = if secs > 0.0 {
        report.records as f64 / secs
    } else {
        0.0
    };
    Ok(report)
}

/// The source and its catalog as the gateway holds them, or why its records are skipped.
async fn source_ctx(ports: &impl Ports, id: &str) -> Result<SourceCtx, &'static str> {
    let rt = ports.source(id).ok_or("source_not_registered")?;
    if rt.source.kind != SourceKind::Postgres {
        return Err("not_a_sql_source");
    }
    let catalog = ports
        .catalog(&rt)
        .await
        .map_err(|_| "catalog_unavailable")?;
    Ok(SourceCtx {
        source: rt.source.clone(),
        catalog,
        memo: ShapeMemo::new(DEFAULT_MEMO_BYTES),
    })
}

impl Replay {
    fn page(&mut self, page: Vec<ReplayableRecord>) {
        for record in page {
            self.report.records += 1;
            match self.one(record) {
                Ok(()) => {}
                Err(reason) => self.report.skip(&reason),
            }
        }
    }

    fn one(&mut self, record: ReplayableRecord) -> Result<(), String> {
        if record.fingerprint.as_deref() != Some(fingerprint(&record.statement).as_str()) {
            // The record kept a shortened statement (refused input longer than the cap).
            return Err("statement_truncated".into());
        }
        let basis: ReplayBasis = serde_json::from_value(record.replay)
            .map_err(|_| "replay_facts_unreadable".to_string())?;
        let Some(recorded) = basis.effect.clone() else {
            return Err("not_decided".into());
        };
        let call = RecordedCall {
            seq: record.seq,
            at: record.at,
            identity: record.identity,
            source: record.source,
            statement: record.statement,
            basis,
        };
        let ctx = match self.sources.get(&call.source) {
            Some(Ok(ctx)) => ctx,
            Some(Err(reason)) => return Err((*reason).to_string()),
            None => return Err("source_not_registered".into()),
        };
        let key = (call.identity.clone(), call.source.clone());
        if !self.profiles.contains_key(&key) {
            let loaded = (|| {
                let live = self.live.profile(&call.identity, &call.source)?;
                let tried = self.tried.profile(&call.identity, &call.source)?;
                Ok::<_, ControlError>(Profiles {
                    same: live == tried,
                    live,
                    tried,
                })
            })()
            .map_err(|_| "profile_unreadable".to_string());
            self.profiles.insert(key.clone(), loaded);
        }
        let Some(Ok(profiles)) = self.profiles.get(&key) else {
            return Err("profile_unreadable".into());
        };
        let judge = Judge {
            source: &ctx.source,
            catalog: &ctx.catalog.catalog,
            memo: Some(&ctx.memo),
            limits: &self.limits,
        };
        let live = judge.decide(profiles.live.as_ref(), &call);
        let would: Judged = if profiles.same {
            live.clone()
        } else {
            judge.decide(profiles.tried.as_ref(), &call)
        };
        self.report
            .add(&call, &recorded, &live, &would, self.examples_per_kind);
        Ok(())
    }
}

/// `since` as an operator writes it: an RFC 3339 instant, or a span back from `now` such as
/// `90s`, `30m`, `12h` or `7d`.
pub fn parse_since(
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<chrono::DateTime<chrono::Utc>, String> {
    let text = text.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&chrono::Utc));
    }
    let bad = || {
        format!("since {text:?} must be an RFC 3339 instant or a span such as 90s, 30m, 12h or 7d")
    };
    let split = text.len().checked_sub(1).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let span = match unit {
        "s" => chrono::Duration::try_seconds(n),
        "m" => chrono::Duration::try_minutes(n),
        "h" => chrono::Duration::try_hours(n),
        "d" => chrono::Duration::try_days(n),
        _ => None,
    }
    .filter(|_| n >= 0)
    .ok_or_else(bad)?;
    now.checked_sub_signed(span).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::parse_since;

    #[test]
    fn since_is_an_instant_or_a_span_back() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-04T12:00:00Z")
            .expect("valid")
            .with_timezone(&chrono::Utc);
        let cases = [
            ("7d", Some("2026-11-27T12:00:00+00:00")),
            ("12h", Some("2026-12-04T00:00:00+00:00")),
            ("30m", Some("2026-12-04T11:30:00+00:00")),
            ("90s", Some("2026-12-04T11:58:30+00:00")),
            ("2026-12-01T00:00:00Z", Some("2026-12-01T00:00:00+00:00")),
            ("7w", None),
            ("-1d", None),
            ("d", None),
            ("", None),
            ("99999999999999d", None),
        ];
        for (text, want) in cases {
            let got = parse_since(text, now).ok().map(|t| t.to_rfc3339());
            assert_eq!(got.as_deref(), want, "{text:?}");
        }
    }
}
