//! Rate limiting: GCRA buckets (governor) per identity, per identity and source, and a
//! separate write budget per identity and source, behind [`RateLimitHandle`].
//!
//! The buckets live in a shared map and are checked on the caller's thread (governor's
//! cells are atomic), so a check costs no actor round trip and no cross-thread wake-up;
//! one actor per gateway evicts idle buckets.

mod actor;

use std::time::Duration;

use actix::Addr;
use uuid::Uuid;

pub use actor::RateLimitActor;

/// A sustained rate and a burst.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quota {
    pub per_second: f64,
    pub burst: u32,
}

/// What one call asks for.
#[derive(Debug, Clone)]
pub struct RateRequest {
    pub identity: Uuid,
    pub source: Option<String>,
    pub write: bool,
    pub quota: Quota,
    pub write_quota: Quota,
}

/// Which budget refused, and how long until the call would be allowed.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimited {
    pub scope: &'static str,
    pub retry_after: Duration,
}

#[derive(Clone)]
pub struct RateLimitHandle {
    addr: Addr<RateLimitActor>,
    buckets: actor::Buckets,
}

impl RateLimitHandle {
    /// Starts the eviction actor on `arbiter`.
    pub fn start(arbiter: &actix::ArbiterHandle) -> Self {
        let buckets = actor::Buckets::default();
        let shared = buckets.clone();
        let addr = actix::Actor::start_in_arbiter(arbiter, move |_| RateLimitActor::new(shared));
        Self { addr, buckets }
    }

    /// `Ok` allowed; `Err` refused, with the wait. Answered on the caller's thread,
    /// without a round trip through the actor.
    pub fn check(&self, request: &RateRequest) -> Result<(), RateLimited> {
        self.buckets.check(request)
    }

    pub fn is_alive(&self) -> bool {
        self.addr.connected()
    }
}
