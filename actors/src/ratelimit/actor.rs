//! The buckets, checked on the caller's thread, and the actor that evicts idle ones.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, AsyncContext, Context};
use dashmap::DashMap;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultDirectRateLimiter, Quota as GQuota, RateLimiter};
use uuid::Uuid;

use super::{Quota, RateLimited, RateRequest};
use crate::supervise::supervisable;

/// Buckets idle this long are dropped (a fresh bucket starts full, which is what an idle
/// bucket would have refilled to anyway).
const IDLE_EVICTION: Duration = Duration::from_secs(600);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Identity(Uuid),
    Source(Uuid, String),
    Write(Uuid, String),
}

struct Bucket {
    limiter: DefaultDirectRateLimiter,
    quota: Quota,
    last_used: Instant,
}

/// Every bucket, shared: the handle checks calls against it on the caller's thread (GCRA
/// cells are atomic), the actor evicts idle buckets.
#[derive(Clone, Default)]
pub(super) struct Buckets(Arc<DashMap<Key, Bucket>>);

impl Buckets {
    /// Takes one cell from each budget of `r`, in order (identity, identity and source,
    /// writes); the first that is empty refuses, with its wait.
    pub(super) fn check(&self, r: &RateRequest) -> Result<(), RateLimited> {
        let mut keys = vec![(Key::Identity(r.identity), r.quota, "identity")];
        if let Some(source) = &r.source {
            keys.push((
                Key::Source(r.identity, source.clone()),
                r.quota,
                "identity and source",
            ));
            if r.write {
                keys.push((
                    Key::Write(r.identity, source.clone()),
                    r.write_quota,
                    "writes",
                ));
            }
        }
        for (key, quota, scope) in keys {
            if let Err(retry_after) = self.take(key, quota) {
                metrics::counter!("interlock_rate_limit_rejections_total", "scope" => scope)
                    .increment(1);
                return Err(RateLimited { scope, retry_after });
            }
        }
        Ok(())
    }

    fn take(&self, key: Key, quota: Quota) -> Result<(), Duration> {
        let now = Instant::now();
        let mut bucket = self.0.entry(key).or_insert_with(|| Bucket {
            limiter: limiter(quota),
            quota,
            last_used: now,
        });
        if bucket.quota != quota {
            bucket.limiter = limiter(quota);
            bucket.quota = quota;
        }
        bucket.last_used = now;
        bucket
            .limiter
            .check()
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    fn evict_idle(&self) {
        let now = Instant::now();
        self.0
            .retain(|_, b| now.duration_since(b.last_used) < IDLE_EVICTION);
    }
}

/// Keeps the shared buckets small: drops those idle for [`IDLE_EVICTION`].
pub struct RateLimitActor {
    buckets: Buckets,
    costs: super::cost::CostBuckets,
}

supervisable!(RateLimitActor);

impl RateLimitActor {
    pub(super) fn new(buckets: Buckets, costs: super::cost::CostBuckets) -> Self {
        Self { buckets, costs }
    }
}

impl Actor for RateLimitActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(Duration::from_secs(60), |act, _| {
            act.buckets.evict_idle();
            act.costs.evict_idle(IDLE_EVICTION);
        });
    }
}

fn limiter(q: Quota) -> DefaultDirectRateLimiter {
    let burst = NonZeroU32::new(q.burst.max(1)).unwrap_or(NonZeroU32::MIN);
    let period = Duration::from_secs_f64(1.0 / q.per_second.max(1e-6));
    let quota = GQuota::with_period(period)
        .unwrap_or_else(|| GQuota::per_second(NonZeroU32::MIN))
        .allow_burst(burst);
    RateLimiter::direct(quota)
}
