//! The window and bucket width of a chart (`since`, `until`, `bucket`), checked the same way
//! for every chart the admin API serves.

use chrono::{DateTime, Utc};

use crate::policy_lab::replay::parse_since;

/// Most buckets one chart holds.
pub const MAX_BUCKETS: i64 = 2_000;

/// `[since, until)` and the bucket width (s): `since` is an RFC 3339 instant or a span back
/// from `now` (default `default_since`), `until` defaults to `now`, the bucket to the window
/// in 48 buckets of at least `min_bucket` s.
pub fn chart_window(
    since: Option<&str>,
    until: Option<DateTime<Utc>>,
    bucket: Option<u32>,
    now: DateTime<Utc>,
    default_since: &str,
    min_bucket: u32,
) -> Result<(DateTime<Utc>, DateTime<Utc>, u32), String> {
    let since = parse_since(since.unwrap_or(default_since), now)?;
    let until = until.unwrap_or(now);
    let window = (until - since).num_seconds();
    if window <= 0 {
        return Err("since must be before until".into());
    }
    let bucket = bucket.unwrap_or_else(|| {
        u32::try_from((window / 48).max(i64::from(min_bucket))).unwrap_or(u32::MAX)
    });
    if bucket < min_bucket || window / i64::from(bucket.max(1)) > MAX_BUCKETS {
        return Err(format!(
            "bucket {bucket} s must be at least {min_bucket} s and make at most {MAX_BUCKETS} \
             buckets of the window"
        ));
    }
    Ok((since, until, bucket))
}
