//! Report-only rules over time: per source, policy and rule, how many calls each rule
//! matched in each time bucket and what enforcing it would have done (`would_change`,
//! `no_change`) or that its condition could not be evaluated (`errors`). The console charts
//! it, so an operator can promote a rule once its would-be effects are the ones they want.
//!
//! The control database counts them minute by minute as it stores each audit record
//! (`policy_report_minutes`, kept by a trigger in the record's own transaction: migration
//! 0026), so a month's window reads a few rows per rule and minute instead of every record
//! of the month.

use std::collections::BTreeMap;

use chrono::{DateTime, DurationRound as _, Utc};
use serde::Serialize;

use super::{ControlError, ControlPool};

/// One bucket of one rule.
#[derive(Debug, Clone, Serialize)]
pub struct Bucket {
    pub at: DateTime<Utc>,
    pub would_change: i64,
    pub no_change: i64,
    pub errors: i64,
}

/// One report-only rule's outcomes in the window.
#[derive(Debug, Clone, Serialize)]
pub struct RuleSeries {
    pub source: String,
    pub policy: String,
    pub rule: String,
    pub would_change: i64,
    pub no_change: i64,
    pub errors: i64,
    /// Only buckets with a matched call, oldest first.
    pub buckets: Vec<Bucket>,
}

/// Where one stretch of a window is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// `policy_report_hours`: whole hours after counting began.
    Hours,
    /// `policy_report_minutes`: whole minutes after counting began.
    Minutes,
    /// The audit records themselves: before counting began.
    Records,
}

/// The stretches `[since, until)` (whole minutes) is read from, which cover it exactly,
/// without overlap: the audit records before `counted_from`, then, for buckets of whole
/// hours, the whole hours in hours and the ragged ends in minutes; for other buckets, all
/// in minutes.
pub fn stretches(
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    bucket_secs: u32,
    counted_from: DateTime<Utc>,
) -> Vec<(Counted, DateTime<Utc>, DateTime<Utc>)> {
    let mut out = Vec::new();
    if since < counted_from {
        out.push((Counted::Records, since, until.min(counted_from)));
    }
    let (from, to) = (since.max(counted_from), until);
    if from >= to {
        return out;
    }
    let hour = chrono::Duration::hours(1);
    let first_hour = from
        .duration_trunc(hour)
        .map(|h| if h < from { h + hour } else { h });
    let last_hour = to.duration_trunc(hour);
    match (first_hour, last_hour) {
        (Ok(a), Ok(b)) if bucket_secs % 3600 == 0 && a < b => {
            if from < a {
                out.push((Counted::Minutes, from, a));
            }
            out.push((Counted::Hours, a, b));
            if b < to {
                out.push((Counted::Minutes, b, to));
            }
        }
        _ => out.push((Counted::Minutes, from, to)),
    }
    out
}

/// Counts in buckets of `$3` seconds over `[$1, $2)`, for source `$4` or all.
const FROM_HOURS: &str = "
    SELECT source_id, policy, rule,
           date_bin(make_interval(secs => $3), hour, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
           sum(would_change)::bigint, sum(no_change)::bigint, sum(errors)::bigint
      FROM policy_report_hours
     WHERE hour >= $1 AND hour < $2 AND ($4::text IS NULL OR source_id = $4)
     GROUP BY 1, 2, 3, 4";
const FROM_MINUTES: &str = "
    SELECT source_id, policy, rule,
           date_bin(make_interval(secs => $3), minute, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
           sum(would_change)::bigint, sum(no_change)::bigint, sum(errors)::bigint
      FROM policy_report_minutes
     WHERE minute >= $1 AND minute < $2 AND ($4::text IS NULL OR source_id = $4)
     GROUP BY 1, 2, 3, 4";
/// The same from the audit records, with the trigger's reading of an outcome (migration
/// 0026).
const FROM_RECORDS: &str = "
    SELECT a.source_id, coalesce(p ->> 'policy', ''), coalesce(p ->> 'rule', ''),
           date_bin(make_interval(secs => $3), a.at, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
           count(*) FILTER (WHERE p ->> 'result' = 'matched'
                              AND p -> 'would' IS DISTINCT FROM '\"no_change\"'::jsonb),
           count(*) FILTER (WHERE p ->> 'result' = 'matched'
                              AND p -> 'would' = '\"no_change\"'::jsonb),
           count(*) FILTER (WHERE p ->> 'result' = 'error')
      FROM audit_records a
      CROSS JOIN LATERAL jsonb_array_elements(
          CASE WHEN jsonb_typeof(a.decision -> 'policy') = 'array'
               THEN a.decision -> 'policy' ELSE '[]'::jsonb END) p
     WHERE NOT a.void AND a.source_id IS NOT NULL
       AND a.decision -> 'policy' @> '[{\"mode\": \"report\"}]'
       AND p ->> 'mode' = 'report' AND p ->> 'result' IN ('matched', 'error')
       AND a.at >= $1 AND a.at < $2 AND ($4::text IS NULL OR a.source_id = $4)
     GROUP BY 1, 2, 3, 4";

/// The outcomes of every report-only rule that matched a call in `[since, until)` (whole
/// minutes), in buckets of `bucket_secs` (a whole number of minutes) aligned to the Unix
/// epoch. The hours and minutes the database counted as it stored the records (migration
/// 0026) answer from when counting began; any part of the window before that is read from
/// the audit records themselves.
pub async fn report_only_series(
    pool: &ControlPool,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    bucket_secs: u32,
    source: Option<&str>,
) -> Result<Vec<RuleSeries>, ControlError> {
    let client = pool.get().await?;
    let counted_from: DateTime<Utc> = client
        .query_one("SELECT counted_from FROM policy_report_counting", &[])
        .await?
        .get(0);
    let bucket = f64::from(bucket_secs);
    let mut rows = Vec::new();
    for (counted, from, to) in stretches(since, until, bucket_secs, counted_from) {
        let sql = match counted {
            Counted::Hours => FROM_HOURS,
            Counted::Minutes => FROM_MINUTES,
            Counted::Records => FROM_RECORDS,
        };
        rows.extend(client.query(sql, &[&from, &to, &bucket, &source]).await?);
    }
    // Every stretch in one order; a bucket two stretches share is added up.
    let mut counted: BTreeMap<(String, String, String, DateTime<Utc>), Bucket> = BTreeMap::new();
    for r in rows {
        let at: DateTime<Utc> = r.get(3);
        let b = counted
            .entry((r.get(0), r.get(1), r.get(2), at))
            .or_insert(Bucket {
                at,
                would_change: 0,
                no_change: 0,
                errors: 0,
            });
        b.would_change += r.get::<_, i64>(4);
        b.no_change += r.get::<_, i64>(5);
        b.errors += r.get::<_, i64>(6);
    }
    let mut series: Vec<RuleSeries> = Vec::new();
    for ((source, policy, rule, _), bucket) in counted {
        let same = series
            .last()
            .is_some_and(|s| s.source == source && s.policy == policy && s.rule == rule);
        if !same {
            series.push(RuleSeries {
                source,
                policy,
                rule,
                would_change: 0,
                no_change: 0,
                errors: 0,
                buckets: Vec::new(),
            });
        }
        if let Some(s) = series.last_mut() {
            s.would_change += bucket.would_change;
            s.no_change += bucket.no_change;
            s.errors += bucket.errors;
            s.buckets.push(bucket);
        }
    }
    Ok(series)
}

/// Drops the counted minutes older than `before`, and the hours that ended before it (the
/// audit records they count are gone: retention archived them).
pub async fn prune(pool: &ControlPool, before: DateTime<Utc>) -> Result<(), ControlError> {
    let hour_began = before
        .duration_trunc(chrono::Duration::hours(1))
        .map_err(|e| ControlError::Invalid(e.to_string()))?;
    pool.get()
        .await?
        .execute(
            "WITH minutes AS (DELETE FROM policy_report_minutes WHERE minute < $1)
             DELETE FROM policy_report_hours WHERE hour < $2",
            &[&before, &hour_began],
        )
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{stretches, Counted};
    use chrono::{DateTime, Duration, TimeZone as _, Utc};

    fn t(minutes: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap() + Duration::minutes(minutes)
    }

    /// Every window, bucket and start of counting on a grid of minutes: the stretches
    /// cover the window exactly, in order, without overlap; hours only for whole hours
    /// after counting began and buckets of whole hours; records only before it.
    #[test]
    fn stretches_cover_the_window_exactly() {
        let points = [0, 1, 59, 60, 61, 119, 120, 185, 600, 1439, 1440, 3000];
        for since in points {
            for until in points.iter().copied().filter(|u| *u > since) {
                for counted in [0, 30, 60, 61, 600, 5000] {
                    for bucket in [60, 300, 3600, 7200, 5400] {
                        let parts = stretches(t(since), t(until), bucket, t(counted));
                        let case = format!(
                            "{since}..{until}, counted from {counted}, bucket {bucket}: {parts:?}"
                        );
                        assert_eq!(parts.first().map(|p| p.1), Some(t(since)), "{case}");
                        assert_eq!(parts.last().map(|p| p.2), Some(t(until)), "{case}");
                        for w in parts.windows(2) {
                            assert_eq!(w[0].2, w[1].1, "{case}");
                        }
                        for (kind, from, to) in &parts {
                            assert!(from < to, "{case}");
                            match kind {
                                Counted::Records => assert!(*to <= t(counted), "{case}"),
                                Counted::Minutes => assert!(*from >= t(counted), "{case}"),
                                Counted::Hours => {
                                    assert!(*from >= t(counted) && bucket % 3600 == 0, "{case}");
                                    assert_eq!(from.timestamp() % 3600, 0, "{case}");
                                    assert_eq!(to.timestamp() % 3600, 0, "{case}");
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_month_reads_hours_and_its_ragged_ends_minutes() {
        let parts = stretches(t(37), t(30 * 1440 + 13), 54_000, t(0));
        assert_eq!(
            parts,
            vec![
                (Counted::Minutes, t(37), t(60)),
                (Counted::Hours, t(60), t(30 * 1440)),
                (Counted::Minutes, t(30 * 1440), t(30 * 1440 + 13)),
            ]
        );
    }
}
