//! Rate limiting: GCRA buckets (governor) per identity, per identity and source, and a
//! separate write budget per identity and source, behind [`RateLimitHandle`]; and cost
//! budgets, in planner cost units per identity and source (`cost.rs`).
//!
//! The buckets live in a shared map and are checked on the caller's thread (governor's
//! cells are atomic), so a check costs no actor round trip and no cross-thread wake-up;
//! one actor per gateway evicts idle buckets.

mod actor;
mod cost;

use std::time::Duration;

use uuid::Uuid;

pub use actor::RateLimitActor;
pub use cost::{BudgetClock, CostQuota, CostRefused, CostRequest};

use crate::supervise::{Home, Slot, Supervision};

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

/// The rate limiter. Its buckets live outside the actor (supervised as `rate_limiter`), so a
/// restart changes nothing a caller can see: spent budgets stay spent, and no identity gets
/// a fresh burst.
#[derive(Clone)]
pub struct RateLimitHandle {
    _evictor: Slot<RateLimitActor>,
    buckets: actor::Buckets,
    costs: cost::CostBuckets,
}

impl RateLimitHandle {
    /// Starts the eviction actor under `supervision`.
    pub fn start(supervision: &Supervision) -> Self {
        let buckets = actor::Buckets::default();
        let costs = cost::CostBuckets::default();
        let (shared, shared_costs) = (buckets.clone(), costs.clone());
        let evictor = supervision.supervise("rate_limiter".into(), Home::PerCall, 16, move |_| {
            RateLimitActor::new(shared.clone(), shared_costs.clone())
        });
        Self {
            _evictor: evictor,
            buckets,
            costs,
        }
    }

    /// Takes a read's estimated cost from its identity's budget on its source, on the
    /// caller's thread.
    pub fn charge_cost(&self, request: &CostRequest) -> Result<(), CostRefused> {
        self.costs.charge(request)
    }

    /// The clock the cost budgets refill by (tests move it forward).
    pub fn budget_clock(&self) -> &BudgetClock {
        &self.costs.clock
    }

    /// `Ok` allowed; `Err` refused, with the wait. Answered on the caller's thread,
    /// without a round trip through the actor.
    pub fn check(&self, request: &RateRequest) -> Result<(), RateLimited> {
        self.buckets.check(request)
    }
}
