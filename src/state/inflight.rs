//! In-flight governed calls by (caller, JSON-RPC request id), so `notifications/cancelled`
//! can cancel the caller's own request — and only its own: without sessions, an id alone
//! must not let one caller cancel another's work.

use std::sync::Arc;

use dashmap::DashMap;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

type Key = ([u8; 32], String);

#[derive(Default, Clone)]
pub struct InFlight {
    calls: Arc<DashMap<Key, CancellationToken>>,
}

/// Removes its entry when the call ends.
pub struct Registration {
    calls: Arc<DashMap<Key, CancellationToken>>,
    key: Key,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.calls.remove(&self.key);
    }
}

fn key(bearer: Option<&str>, request_id: &serde_json::Value) -> Key {
    let caller: [u8; 32] = Sha256::digest(bearer.unwrap_or_default().as_bytes()).into();
    (caller, request_id.to_string())
}

impl InFlight {
    /// Registers a call; the returned guard unregisters it.
    pub fn register(
        &self,
        bearer: Option<&str>,
        request_id: &serde_json::Value,
        token: CancellationToken,
    ) -> Registration {
        let key = key(bearer, request_id);
        self.calls.insert(key.clone(), token);
        Registration {
            calls: self.calls.clone(),
            key,
        }
    }

    /// Cancels the caller's own call with this id; returns whether one was running.
    pub fn cancel(&self, bearer: Option<&str>, request_id: &serde_json::Value) -> bool {
        match self.calls.get(&key(bearer, request_id)) {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_caller_can_cancel_its_own_request() {
        let inflight = InFlight::default();
        let token = CancellationToken::new();
        let id = serde_json::json!(7);
        let reg = inflight.register(Some("key-a"), &id, token.clone());
        assert!(
            !inflight.cancel(Some("key-b"), &id),
            "another caller cannot cancel"
        );
        assert!(!token.is_cancelled());
        assert!(inflight.cancel(Some("key-a"), &id));
        assert!(token.is_cancelled());
        drop(reg);
        assert!(
            !inflight.cancel(Some("key-a"), &id),
            "finished calls are forgotten"
        );
    }
}
