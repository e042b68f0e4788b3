//! Access profiles of (identity, source), cached for the same bound as identities, so a
//! revoked grant stops working within `identity.cache_ttl_ms`.

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::control::{profiles::load_profile, ControlError, ControlPool};
use crate::governance::AccessProfile;

/// A profile and its fingerprint (part of every cache key, so callers with different
/// grants or masks never share cached results).
#[derive(Debug)]
pub struct LoadedProfile {
    pub profile: AccessProfile,
    pub fingerprint: String,
}

#[derive(Clone)]
pub struct ProfileCache {
    cache: Cache<(Uuid, String), Option<Arc<LoadedProfile>>>,
    control: ControlPool,
}

impl ProfileCache {
    pub fn new(control: ControlPool, ttl: Duration) -> Self {
        Self {
            cache: Cache::builder()
                .max_capacity(100_000)
                .time_to_live(ttl)
                .build(),
            control,
        }
    }

    /// The caller's profile on `source`; `None` when it holds no role there.
    pub async fn get(
        &self,
        identity: Uuid,
        source: &str,
    ) -> Result<Option<Arc<LoadedProfile>>, Arc<ControlError>> {
        let control = self.control.clone();
        let s = source.to_string();
        self.cache
            .try_get_with((identity, source.to_string()), async move {
                let profile = load_profile(&control, identity, &s).await?;
                Ok(profile.map(|profile| {
                    let fingerprint = hex::encode(Sha256::digest(
                        serde_json::to_vec(&profile).unwrap_or_default(),
                    ));
                    Arc::new(LoadedProfile {
                        profile,
                        fingerprint,
                    })
                }))
            })
            .await
    }

    /// Forgets every cached profile (after grants or policies changed, on any replica).
    pub fn invalidate_all(&self) {
        self.cache.invalidate_all();
    }
}
