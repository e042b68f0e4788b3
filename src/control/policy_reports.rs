//! Report-only rules over time, from the audit log: per source, policy and rule, how many
//! calls each rule matched in each time bucket and what enforcing it would have done
//! (`would_change`, `no_change`) or that its condition could not be evaluated (`errors`).
//! The console charts it, so an operator can promote a rule once its would-be effects are
//! the ones they want.

use chrono::{DateTime, Utc};
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

/// The outcomes of every report-only rule that matched a call in `[since, until)`, in
/// buckets of `bucket_secs` aligned to the Unix epoch.
pub async fn report_only_series(
    pool: &ControlPool,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    bucket_secs: u32,
    source: Option<&str>,
) -> Result<Vec<RuleSeries>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT a.source_id, p ->> 'policy', p ->> 'rule',
                    date_bin(make_interval(secs => $3), a.at, TIMESTAMPTZ '1970-01-01 00:00:00+00'),
                    count(*) FILTER (WHERE p ->> 'result' <> 'error'
                                       AND p -> 'would' IS DISTINCT FROM '\"no_change\"'::jsonb),
                    count(*) FILTER (WHERE p ->> 'result' <> 'error' AND p -> 'would' = '\"no_change\"'::jsonb),
                    count(*) FILTER (WHERE p ->> 'result' = 'error')
               FROM audit_records a
               CROSS JOIN LATERAL jsonb_array_elements(
                   CASE WHEN jsonb_typeof(a.decision -> 'policy') = 'array'
                        THEN a.decision -> 'policy' ELSE '[]'::jsonb END) p
              WHERE NOT a.void AND a.decision ? 'policy' AND a.source_id IS NOT NULL
                AND p ->> 'mode' = 'report'
                AND a.at >= $1 AND a.at < $2
                AND ($4::text IS NULL OR a.source_id = $4)
              GROUP BY 1, 2, 3, 4
              ORDER BY 1, 2, 3, 4",
            &[&since, &until, &f64::from(bucket_secs), &source],
        )
        .await?;
    let mut series: Vec<RuleSeries> = Vec::new();
    for r in rows {
        let (source, policy, rule): (String, String, String) = (r.get(0), r.get(1), r.get(2));
        let bucket = Bucket {
            at: r.get(3),
            would_change: r.get(4),
            no_change: r.get(5),
            errors: r.get(6),
        };
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
