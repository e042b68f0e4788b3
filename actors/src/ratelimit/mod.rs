//! Rate limiting: GCRA buckets (governor) per identity, per identity and source, and a
//! separate write budget per identity and source, owned by one actor behind
//! [`RateLimitHandle`].
//!
//! The handle enqueues with `try_send`, so when the actor's mailbox is full the call fails
//! fast (the gateway answers 503) instead of queueing unboundedly.

mod actor;

use std::time::Duration;

use actix::Addr;
use tokio::sync::oneshot;
use uuid::Uuid;

pub use actor::RateLimitActor;

use crate::ActorError;

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
}

const REPLY_TIMEOUT: Duration = Duration::from_secs(2);

impl RateLimitHandle {
    pub fn start(arbiter: &actix::ArbiterHandle, mailbox: usize) -> Self {
        let addr = actix::Actor::start_in_arbiter(arbiter, move |ctx| {
            ctx.set_mailbox_capacity(mailbox);
            RateLimitActor::default()
        });
        Self { addr }
    }

    /// `Ok(Ok(()))` allowed; `Ok(Err(limited))` refused with the wait; `Err` the limiter is
    /// overloaded or gone.
    pub async fn check(&self, request: RateRequest) -> Result<Result<(), RateLimited>, ActorError> {
        let (tx, rx) = oneshot::channel();
        self.addr
            .try_send(actor::Check { request, reply: tx })
            .map_err(|e| ActorError::Mailbox(format!("rate limiter: {e}")))?;
        tokio::time::timeout(REPLY_TIMEOUT, rx)
            .await
            .map_err(|_| ActorError::Mailbox("rate limiter did not answer in time".into()))?
            .map_err(|_| ActorError::Mailbox("rate limiter stopped".into()))
    }

    pub fn is_alive(&self) -> bool {
        self.addr.connected()
    }
}
