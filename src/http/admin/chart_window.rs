//! The window and bucket width of a chart (`since`, `until`, `bucket`), checked the same way
//! for every chart the admin API serves.

use chrono::{DateTime, Utc};

use crate::policy_lab::replay::parse_since;

/// Most buckets one chart holds.
pub const MAX_BUCKETS: i64 = 2_000;

/// `[since, until)` and the bucket width (s): `since` is an RFC 3339 instant or a span back
/// from `now` (default `default_since`), `until` defaults to `now`, the bucket to the window
/// in 48 buckets of at least a minute, rounded up to a whole number of `step` s. A bucket
/// given must be a whole number of `step` s.
pub fn chart_window(
    since: Option<&str>,
    until: Option<DateTime<Utc>>,
    bucket: Option<u32>,
    now: DateTime<Utc>,
    default_since: &str,
    step: u32,
) -> Result<(DateTime<Utc>, DateTime<Utc>, u32), String> {
    let step = step.max(1);
    let since = parse_since(since.unwrap_or(default_since), now)?;
    let until = until.unwrap_or(now);
    let window = (until - since).num_seconds();
    if window <= 0 {
        return Err("since must be before until".into());
    }
    let bucket = bucket.unwrap_or_else(|| {
        let fair = u32::try_from((window / 48).max(60)).unwrap_or(u32::MAX);
        fair.div_ceil(step).saturating_mul(step)
    });
    if bucket == 0 || bucket % step != 0 {
        return Err(format!(
            "bucket {bucket} s must be a whole number of {step} s (60, 300, 3600, …)"
        ));
    }
    if window / i64::from(bucket) > MAX_BUCKETS {
        return Err(format!(
            "bucket {bucket} s makes more than {MAX_BUCKETS} buckets of the window; widen it"
        ));
    }
    Ok((since, until, bucket))
}

#[cfg(test)]
mod tests {
    use super::chart_window;

    #[test]
    fn defaults_are_whole_steps_and_bad_buckets_are_named() {
        let now = chrono::Utc::now();
        for (since, step, want) in [
            ("6h", 60, 480),
            ("6h", 1, 450),
            ("1h", 60, 120),
            ("10m", 60, 60),
            ("10m", 1, 60),
        ] {
            let (_, _, bucket) =
                chart_window(Some(since), None, None, now, "6h", step).expect(since);
            assert_eq!(bucket, want, "{since} step {step}");
        }
        for (bucket, step) in [(90, 60), (30, 60), (0, 1)] {
            assert!(
                chart_window(Some("1h"), None, Some(bucket), now, "6h", step).is_err(),
                "{bucket}"
            );
        }
        assert!(
            chart_window(Some("30d"), None, Some(60), now, "6h", 60).is_err(),
            "too many"
        );
    }
}
