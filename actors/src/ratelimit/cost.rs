//! Cost budgets: GCRA over planner cost units (governor's weighted check), one bucket per
//! identity and source, on a clock tests can move forward.

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dashmap::DashMap;
use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota as GQuota, RateLimiter};
use uuid::Uuid;

/// Cost units per second and the most that may be spent at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostQuota {
    pub per_second: f64,
    pub burst: f64,
}

/// One read's charge: its estimated cost, from its identity's budget on its source.
#[derive(Debug, Clone)]
pub struct CostRequest {
    pub identity: Uuid,
    pub source: String,
    pub quota: CostQuota,
    /// The estimate, in whole cost units (at least 1).
    pub units: f64,
}

/// Why a charge was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum CostRefused {
    /// The budget holds too little now; it will in `retry_after`.
    Exhausted { retry_after: Duration },
    /// The read costs more than the whole burst: no wait helps.
    OverBurst { burst: f64 },
}

/// The budgets' clock: the monotonic clock, plus however far a test moved it.
#[derive(Debug, Clone, Default)]
pub struct BudgetClock {
    ahead_ns: Arc<AtomicU64>,
}

impl BudgetClock {
    /// Moves the clock forward by `by` (tests: a budget refills without waiting).
    pub fn advance(&self, by: Duration) {
        let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.ahead_ns.fetch_add(ns, Ordering::AcqRel);
    }
}

impl Clock for BudgetClock {
    type Instant = Instant;

    fn now(&self) -> Instant {
        Instant::now() + Duration::from_nanos(self.ahead_ns.load(Ordering::Acquire))
    }
}

type Limiter = RateLimiter<NotKeyed, InMemoryState, BudgetClock, NoOpMiddleware<Instant>>;

struct Bucket {
    limiter: Limiter,
    quota: CostQuota,
    last_used: Instant,
}

/// The most units one check can take (governor counts cells in a `u32`).
const MAX_UNITS: f64 = u32::MAX as f64;
/// The fastest refill governor can express: one unit per nanosecond.
const MAX_PER_SECOND: f64 = 1e9;

#[derive(Clone, Default)]
pub(super) struct CostBuckets {
    buckets: Arc<DashMap<(Uuid, String), Bucket>>,
    pub(super) clock: BudgetClock,
}

impl CostBuckets {
    pub(super) fn charge(&self, r: &CostRequest) -> Result<(), CostRefused> {
        let units = r.units.ceil().clamp(1.0, MAX_UNITS);
        let now = self.clock.now();
        let mut bucket = self
            .buckets
            .entry((r.identity, r.source.clone()))
            .or_insert_with(|| Bucket {
                limiter: self.limiter(r.quota),
                quota: r.quota,
                last_used: now,
            });
        if bucket.quota != r.quota {
            bucket.limiter = self.limiter(r.quota);
            bucket.quota = r.quota;
        }
        bucket.last_used = now;
        let n = NonZeroU32::new(units as u32).unwrap_or(NonZeroU32::MIN);
        match bucket.limiter.check_n(n) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(not_until)) => Err(CostRefused::Exhausted {
                retry_after: not_until.wait_time_from(self.clock.now()),
            }),
            // More units than the burst holds: no wait helps.
            Err(_) => Err(CostRefused::OverBurst {
                burst: r.quota.burst,
            }),
        }
    }

    fn limiter(&self, q: CostQuota) -> Limiter {
        let burst =
            NonZeroU32::new(q.burst.clamp(1.0, MAX_UNITS) as u32).unwrap_or(NonZeroU32::MIN);
        let per_second = q.per_second.clamp(1e-6, MAX_PER_SECOND);
        let quota = GQuota::with_period(Duration::from_secs_f64(1.0 / per_second))
            .unwrap_or_else(|| GQuota::per_second(NonZeroU32::MAX))
            .allow_burst(burst);
        RateLimiter::direct_with_clock(quota, self.clock.clone())
    }

    pub(super) fn evict_idle(&self, idle: Duration) {
        let now = self.clock.now();
        self.buckets
            .retain(|_, b| now.duration_since(b.last_used) < idle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(units: f64) -> CostRequest {
        CostRequest {
            identity: Uuid::nil(),
            source: "shop".into(),
            quota: CostQuota {
                per_second: 1_000.0,
                burst: 5_000.0,
            },
            units,
        }
    }

    #[test]
    fn a_budget_drains_by_cost_and_refills_with_the_clock() {
        let buckets = CostBuckets::default();
        assert_eq!(buckets.charge(&request(3_000.0)), Ok(()));
        assert_eq!(buckets.charge(&request(2_000.0)), Ok(()));
        let Err(CostRefused::Exhausted { retry_after }) = buckets.charge(&request(1_500.0)) else {
            panic!("a spent budget must refuse");
        };
        // 1 500 units at 1 000 per second.
        assert!(
            (retry_after.as_secs_f64() - 1.5).abs() < 0.01,
            "{retry_after:?}"
        );
        buckets.clock.advance(Duration::from_millis(1_500));
        assert_eq!(buckets.charge(&request(1_500.0)), Ok(()));
        assert!(buckets.charge(&request(1.0)).is_err());
    }

    #[test]
    fn a_read_costlier_than_the_burst_is_refused_for_good() {
        let buckets = CostBuckets::default();
        assert_eq!(
            buckets.charge(&request(5_001.0)),
            Err(CostRefused::OverBurst { burst: 5_000.0 })
        );
        // Nothing was taken.
        assert_eq!(buckets.charge(&request(5_000.0)), Ok(()));
    }

    #[test]
    fn each_identity_and_source_has_its_own_budget() {
        let buckets = CostBuckets::default();
        assert_eq!(buckets.charge(&request(5_000.0)), Ok(()));
        let other_source = CostRequest {
            source: "hr".into(),
            ..request(5_000.0)
        };
        let other_identity = CostRequest {
            identity: Uuid::from_u128(1),
            ..request(5_000.0)
        };
        assert_eq!(buckets.charge(&other_source), Ok(()));
        assert_eq!(buckets.charge(&other_identity), Ok(()));
        assert!(buckets.charge(&request(1.0)).is_err());
    }
}
