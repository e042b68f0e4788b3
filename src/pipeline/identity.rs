//! `Authorization: Bearer <key>` → identity, by hashed lookup, cached.
//!
//! Both hits and misses are cached for `identity.cache_ttl_ms`, which therefore bounds how
//! long a revoked key keeps working on any replica. Concurrent lookups of one key coalesce
//! into a single control-database query.

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;

use crate::control::identities::{identity_for_key, Identity};
use crate::control::keys::hash_key;
use crate::control::{ControlError, ControlPool};

#[derive(Clone)]
pub struct IdentityResolver {
    cache: Cache<Vec<u8>, Option<Arc<Identity>>>,
    control: ControlPool,
}

impl IdentityResolver {
    pub fn new(control: ControlPool, ttl: Duration) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(100_000)
                .time_to_live(ttl)
                .build(),
            control,
        }
    }

    /// The identity holding this key, or `None` for an unknown or revoked key.
    pub async fn resolve(&self, key: &str) -> Result<Option<Arc<Identity>>, Arc<ControlError>> {
        let control = self.control.clone();
        let owned = key.to_string();
        self.cache
            .try_get_with(hash_key(key), async move {
                identity_for_key(&control, &owned)
                    .await
                    .map(|i| i.map(Arc::new))
            })
            .await
    }

    /// Forgets every cached key (after keys or identities changed, on any replica).
    pub fn invalidate_all(&self) {
        self.cache.invalidate_all();
    }
}

/// The bearer token of an `Authorization` header value, if it is one.
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let value = header?.trim();
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty()).then(|| token.trim())
}

#[cfg(test)]
mod tests {
    use super::bearer;

    #[test]
    fn bearer_tokens_are_extracted_strictly() {
        let cases = [
            (Some("Bearer ilk_abc"), Some("ilk_abc")),
            (Some("bearer   ilk_abc "), Some("ilk_abc")),
            (Some("Basic dXNlcg=="), None),
            (Some("Bearer "), None),
            (Some("ilk_abc"), None),
            (None, None),
        ];
        for (header, want) in cases {
            assert_eq!(bearer(header), want, "{header:?}");
        }
    }
}
