//! Rate limits and cost budgets, per replica or shared by the fleet (`rate_limit.backend`).
//!
//! - `local` (the default): GCRA buckets in this process ([`RateLimitHandle`]). With several
//!   replicas behind a load balancer every replica grants the whole budget, so an identity
//!   gets up to the replica count times its limit (as with Envoy's local rate limits).
//! - `redis`: GCRA in Redis (`rate_limit.redis_url`), one atomic script per check
//!   ([`redis::RedisLimits`]), so a budget holds across the fleet. When Redis does not
//!   answer, `rate_limit.redis_unavailable` decides: `divide` (the default) checks the local
//!   buckets with every budget divided by the number of live replicas; `refuse` refuses the
//!   call (503, fail closed). Either way it is counted in
//!   `interlock_rate_limit_fallback_total` and logged when it starts and ends.

pub mod redis;
mod settings;

pub use settings::{RateLimitBackend, RateLimitSettings, RedisUnavailable};

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use interlock_actors::ratelimit::{
    BudgetClock, CostQuota, CostRefused, CostRequest, Quota, RateLimitHandle, RateLimited,
    RateRequest,
};

use crate::fleet::Fleet;

/// Why a call may not go on.
#[derive(Debug, Clone, PartialEq)]
pub enum RateRefusal {
    /// A budget is spent.
    Limited(RateLimited),
    /// The shared store did not answer and the settings say to fail closed.
    Unavailable,
}

pub struct RateLimits {
    local: RateLimitHandle,
    shared: Option<redis::RedisLimits>,
    when_unavailable: RedisUnavailable,
    fleet: Fleet,
    falling_back: AtomicBool,
}

impl RateLimits {
    pub fn new(
        settings: &RateLimitSettings,
        local: RateLimitHandle,
        fleet: Fleet,
    ) -> Result<Self, ::redis::RedisError> {
        let shared = match settings.backend {
            RateLimitBackend::Local => None,
            RateLimitBackend::Redis if settings.redis_url.is_empty() => {
                return Err(::redis::RedisError::from((
                    ::redis::ErrorKind::InvalidClientConfig,
                    "rate_limit.backend is redis but rate_limit.redis_url is empty",
                )));
            }
            RateLimitBackend::Redis => Some(redis::RedisLimits::new(
                &settings.redis_url,
                Duration::from_millis(settings.redis_timeout_ms),
            )?),
        };
        Ok(RateLimits {
            local,
            shared,
            when_unavailable: settings.redis_unavailable,
            fleet,
            falling_back: AtomicBool::new(false),
        })
    }

    /// Whether this replica is on the fallback now (the shared store did not answer its
    /// last check).
    pub fn falling_back(&self) -> bool {
        self.falling_back.load(Ordering::Acquire)
    }

    /// Takes one call from each budget of `request`.
    pub async fn check(&self, request: &RateRequest) -> Result<(), RateRefusal> {
        let Some(shared) = &self.shared else {
            return self.local.check(request).map_err(RateRefusal::Limited);
        };
        match shared.check(request).await {
            Ok(answer) => {
                self.answered();
                answer.map_err(RateRefusal::Limited)
            }
            Err(e) => match self.unreachable(&e) {
                RedisUnavailable::Refuse => Err(RateRefusal::Unavailable),
                RedisUnavailable::Divide => {
                    let share = divided(request, self.fleet.live_replicas());
                    self.local.check(&share).map_err(RateRefusal::Limited)
                }
            },
        }
    }

    /// The shared store answered: a fallback in progress ends.
    fn answered(&self) {
        if self.falling_back.swap(false, Ordering::AcqRel) {
            tracing::warn!("shared rate limits answer again; fallback ended");
        }
    }

    /// The shared store did not answer: counted, logged when the fallback starts, and what
    /// the settings say to do.
    fn unreachable(&self, e: &redis::Unreachable) -> RedisUnavailable {
        metrics::counter!("interlock_rate_limit_fallback_total", "mode" => self.when_unavailable.as_str())
            .increment(1);
        if !self.falling_back.swap(true, Ordering::AcqRel) {
            tracing::error!(error = %e, mode = self.when_unavailable.as_str(), "shared rate limits unavailable; falling back");
        }
        self.when_unavailable
    }
}

/// Why a read's cost may not be spent.
#[derive(Debug, Clone, PartialEq)]
pub enum CostBudgetRefusal {
    Refused(CostRefused),
    /// The shared store did not answer and the settings say to fail closed.
    Unavailable,
}

impl RateLimits {
    /// Takes a read's estimated cost from its identity's cost budget on its source: in this
    /// process, or in Redis for the fleet (with the same fallback as calls: the budget
    /// divided among the live replicas, or refused).
    pub async fn charge_cost(&self, request: &CostRequest) -> Result<(), CostBudgetRefusal> {
        // No wait lets a read costlier than the whole burst run: refused here, for both
        // backends, without asking either.
        if request.units.ceil().max(1.0) > request.quota.burst.max(1.0).floor() {
            return Err(CostBudgetRefusal::Refused(CostRefused::OverBurst {
                burst: request.quota.burst,
            }));
        }
        let Some(shared) = &self.shared else {
            return self
                .local
                .charge_cost(request)
                .map_err(CostBudgetRefusal::Refused);
        };
        match shared.charge_cost(request).await {
            Ok(answer) => {
                self.answered();
                answer.map_err(CostBudgetRefusal::Refused)
            }
            Err(e) => match self.unreachable(&e) {
                RedisUnavailable::Refuse => Err(CostBudgetRefusal::Unavailable),
                RedisUnavailable::Divide => {
                    let n = self.fleet.live_replicas().max(1) as f64;
                    let share = CostRequest {
                        quota: CostQuota {
                            per_second: request.quota.per_second / n,
                            burst: (request.quota.burst / n).max(1.0),
                        },
                        ..request.clone()
                    };
                    self.local
                        .charge_cost(&share)
                        .map_err(CostBudgetRefusal::Refused)
                }
            },
        }
    }

    /// The clock local cost budgets refill by (tests move it forward).
    pub fn budget_clock(&self) -> &BudgetClock {
        self.local.budget_clock()
    }
}

/// `request` with every budget divided among `replicas` (at least one call of burst each).
fn divided(request: &RateRequest, replicas: usize) -> RateRequest {
    let n = replicas.max(1) as f64;
    let share = |q: Quota| Quota {
        per_second: q.per_second / n,
        burst: ((f64::from(q.burst) / n).floor() as u32).max(1),
    };
    RateRequest {
        quota: share(request.quota),
        write_quota: share(request.write_quota),
        ..request.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::divided;
    use interlock_actors::ratelimit::{Quota, RateRequest};

    #[test]
    fn budgets_are_divided_among_live_replicas() {
        let r = RateRequest {
            identity: uuid::Uuid::nil(),
            source: Some("shop".into()),
            write: true,
            quota: Quota {
                per_second: 5.0,
                burst: 5,
            },
            write_quota: Quota {
                per_second: 1.0,
                burst: 1,
            },
        };
        for (replicas, per_second, burst, write_burst) in [
            (0, 5.0, 5, 1),
            (1, 5.0, 5, 1),
            (2, 2.5, 2, 1),
            (3, 5.0 / 3.0, 1, 1),
        ] {
            let d = divided(&r, replicas);
            assert!((d.quota.per_second - per_second).abs() < 1e-9, "{replicas}");
            assert_eq!(d.quota.burst, burst, "{replicas}");
            assert_eq!(d.write_quota.burst, write_burst, "{replicas}");
        }
    }
}
