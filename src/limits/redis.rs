//! Rate limits and cost budgets shared by every replica: GCRA in Redis, one atomic script
//! per check (`gcra.lua`), on a connection that reconnects by itself once made.

use std::time::{Duration, Instant};

use interlock_actors::ratelimit::{CostRefused, CostRequest, Quota, RateLimited, RateRequest};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

/// How often a replica that cannot reach Redis tries to connect again (calls in between
/// use the fallback at once instead of each waiting for a connect timeout).
const RECONNECT_EVERY: Duration = Duration::from_secs(1);

/// Why Redis did not answer a check.
#[derive(Debug, thiserror::Error)]
#[error("rate limit store unavailable: {0}")]
pub struct Unreachable(String);

pub struct RedisLimits {
    client: redis::Client,
    script: redis::Script,
    timeout: Duration,
    connection: tokio::sync::Mutex<Connection>,
}

enum Connection {
    Up(ConnectionManager),
    Down { since: Instant, tried: Instant },
    Never,
}

impl RedisLimits {
    /// No connection is made until the first check.
    pub fn new(url: &str, timeout: Duration) -> Result<Self, redis::RedisError> {
        Ok(RedisLimits {
            client: redis::Client::open(url)?,
            script: redis::Script::new(include_str!("gcra.lua")),
            timeout,
            connection: tokio::sync::Mutex::new(Connection::Never),
        })
    }

    /// Takes one call from each budget of `request` (all or none).
    pub async fn check(
        &self,
        request: &RateRequest,
    ) -> Result<Result<(), RateLimited>, Unreachable> {
        let budgets = budgets(request);
        let shares: Vec<Share<'_>> = budgets
            .iter()
            .map(|(key, quota, _)| Share {
                key,
                emission_us: emission_us(quota.per_second),
                burst: f64::from(quota.burst.max(1)),
                units: 1.0,
            })
            .collect();
        Ok(match self.take(&shares).await? {
            None => Ok(()),
            Some((refused, wait_us)) => {
                let scope = budgets.get(refused).map_or("identity", |b| b.2);
                metrics::counter!("interlock_rate_limit_rejections_total", "scope" => scope)
                    .increment(1);
                Err(RateLimited {
                    scope,
                    retry_after: Duration::from_micros(wait_us),
                })
            }
        })
    }

    /// Takes a read's estimated cost from its identity's cost budget on its source, shared
    /// by the fleet (the caller has refused a read costlier than the whole burst).
    pub async fn charge_cost(
        &self,
        request: &CostRequest,
    ) -> Result<Result<(), CostRefused>, Unreachable> {
        let burst = request.quota.burst.max(1.0).floor();
        let units = request.units.ceil().max(1.0);
        let key = format!("interlock:rl:c:{}:{}", request.identity, request.source);
        let share = Share {
            key: &key,
            emission_us: emission_us(request.quota.per_second),
            burst,
            units,
        };
        Ok(match self.take(&[share]).await? {
            None => Ok(()),
            Some((_, wait_us)) => Err(CostRefused::Exhausted {
                retry_after: Duration::from_micros(wait_us),
            }),
        })
    }

    /// Runs the script over `shares`: `None` when every budget took its share, else the
    /// index of the first that refused and the microseconds until it would allow.
    async fn take(&self, shares: &[Share<'_>]) -> Result<Option<(usize, u64)>, Unreachable> {
        let mut connection = self.connection().await?;
        let mut invocation = self.script.prepare_invoke();
        for s in shares {
            invocation
                .key(s.key)
                .arg(s.emission_us)
                .arg(s.burst)
                .arg(s.units);
        }
        let answer = tokio::time::timeout(
            self.timeout,
            invocation.invoke_async::<(usize, u64)>(&mut connection),
        )
        .await;
        let (refused, wait_us) = match answer {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                self.mark_down().await;
                return Err(Unreachable(e.to_string()));
            }
            Err(_) => {
                self.mark_down().await;
                return Err(Unreachable(format!("no answer within {:?}", self.timeout)));
            }
        };
        Ok(refused.checked_sub(1).map(|i| (i, wait_us)))
    }

    /// After a failed check: the next calls use the fallback at once, until the next
    /// attempt to connect.
    async fn mark_down(&self) {
        let mut slot = self.connection.lock().await;
        if let Connection::Up(_) = &*slot {
            *slot = Connection::Down {
                since: Instant::now(),
                tried: Instant::now(),
            };
        }
    }

    /// The connection, made (again) when there is none and the last attempt is old enough.
    async fn connection(&self) -> Result<ConnectionManager, Unreachable> {
        let mut slot = self.connection.lock().await;
        let since = match &*slot {
            Connection::Up(c) => return Ok(c.clone()),
            Connection::Down { since, tried } if tried.elapsed() < RECONNECT_EVERY => {
                return Err(Unreachable(format!(
                    "down for {:.1} s",
                    since.elapsed().as_secs_f64()
                )));
            }
            Connection::Down { since, .. } => *since,
            Connection::Never => Instant::now(),
        };
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout))
            .set_number_of_retries(1);
        match self.client.get_connection_manager_with_config(config).await {
            Ok(c) => {
                *slot = Connection::Up(c.clone());
                Ok(c)
            }
            Err(e) => {
                *slot = Connection::Down {
                    since,
                    tried: Instant::now(),
                };
                Err(Unreachable(e.to_string()))
            }
        }
    }
}

/// The budgets of one call, in order: (key, quota, scope).
fn budgets(r: &RateRequest) -> Vec<(String, Quota, &'static str)> {
    let mut all = vec![(
        format!("interlock:rl:i:{}", r.identity),
        r.quota,
        "identity",
    )];
    if let Some(source) = &r.source {
        all.push((
            format!("interlock:rl:s:{}:{source}", r.identity),
            r.quota,
            "identity and source",
        ));
        if r.write {
            all.push((
                format!("interlock:rl:w:{}:{source}", r.identity),
                r.write_quota,
                "writes",
            ));
        }
    }
    all
}

/// One budget's part of a check: what the script is given for it.
struct Share<'a> {
    key: &'a str,
    emission_us: f64,
    burst: f64,
    units: f64,
}

/// Microseconds per unit at `per_second` units a second.
fn emission_us(per_second: f64) -> f64 {
    1_000_000.0 / per_second.max(1e-6)
}
