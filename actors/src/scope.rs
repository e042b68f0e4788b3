//! The scope of one governed request: its id, deadline and cancellation token.
//!
//! The token travels into every actor message that starts work; dropping a future alone
//! does not stop work an actor has already started. Audit work is deliberately not a child
//! of this token, so a cancelled call is still recorded.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone)]
pub struct RequestScope {
    pub request_id: String,
    pub deadline: Instant,
    cancel: CancellationToken,
}

impl RequestScope {
    pub fn new(request_id: impl Into<String>, timeout: Duration) -> Self {
        Self {
            request_id: request_id.into(),
            deadline: Instant::now() + timeout,
            cancel: CancellationToken::new(),
        }
    }

    /// The token to hand to work started for this request.
    pub fn token(&self) -> CancellationToken {
        self.cancel.child_token()
    }

    /// Cancels every piece of work started under this scope.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Time left before the deadline (zero once it has passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancelling_the_scope_cancels_handed_out_tokens() {
        let scope = RequestScope::new("r1", Duration::from_secs(5));
        let token = scope.token();
        assert!(!token.is_cancelled());
        scope.cancel();
        assert!(token.is_cancelled());
        assert!(scope.is_cancelled());
        assert!(scope.remaining() <= Duration::from_secs(5));
    }
}
