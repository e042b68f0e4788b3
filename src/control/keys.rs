//! API keys: generation, hashing, and the key table.
//!
//! A key looks like `ilk_<43 base64url chars>` (256 random bits). Only its SHA-256 is
//! stored; the first 12 characters are kept as a prefix so operators can recognise and
//! revoke a key without ever seeing it again.

use base64::Engine;
use chrono::{DateTime, Utc};
use rand::RngCore;
use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use super::{conflict_on_unique, ControlError, ControlPool};

pub const KEY_PREFIX: &str = "ilk_";
const SHOWN_PREFIX_LEN: usize = 12;

/// A freshly minted key: the only moment the secret exists outside the caller's hands.
#[derive(Debug, Clone, Serialize)]
pub struct NewKey {
    pub key: String,
    pub prefix: String,
    pub identity: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct KeyInfo {
    pub prefix: String,
    pub identity: String,
    pub kind: String,
    pub label: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// `n` random bytes, base64url without padding.
pub fn random_token(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rand::thread_rng().fill_bytes(&mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The stored form of a key.
pub fn hash_key(key: &str) -> Vec<u8> {
    Sha256::digest(key.as_bytes()).to_vec()
}

/// Mints a key for an existing identity.
pub async fn create_key(
    pool: &ControlPool,
    identity: &str,
    label: &str,
) -> Result<NewKey, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt("SELECT id FROM identities WHERE name = $1", &[&identity])
        .await?
        .ok_or_else(|| ControlError::NotFound(format!("no identity named {identity:?}")))?;
    let identity_id: Uuid = row.get(0);
    let key = format!("{KEY_PREFIX}{}", random_token(32));
    let prefix = key[..SHOWN_PREFIX_LEN].to_string();
    client
        .execute(
            "INSERT INTO api_keys (id, identity_id, prefix, key_hash, label) VALUES ($1, $2, $3, $4, $5)",
            &[&Uuid::new_v4(), &identity_id, &prefix, &hash_key(&key), &label],
        )
        .await
        .map_err(|e| conflict_on_unique(e, || "key prefix collision; try again".into()))?;
    Ok(NewKey {
        key,
        prefix,
        identity: identity.to_string(),
    })
}

/// Lists keys (never their secrets), optionally for one identity.
pub async fn list_keys(
    pool: &ControlPool,
    identity: Option<&str>,
) -> Result<Vec<KeyInfo>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT k.prefix, i.name, i.kind, k.label, k.created_at, k.revoked_at
               FROM api_keys k JOIN identities i ON i.id = k.identity_id
              WHERE $1::text IS NULL OR i.name = $1
              ORDER BY i.name, k.created_at",
            &[&identity],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| KeyInfo {
            prefix: r.get(0),
            identity: r.get(1),
            kind: r.get(2),
            label: r.get(3),
            created_at: r.get(4),
            revoked_at: r.get(5),
        })
        .collect())
}

/// Revokes the key with this prefix. Revoking twice is an error naming the first time.
pub async fn revoke_key(pool: &ControlPool, prefix: &str) -> Result<KeyInfo, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            "UPDATE api_keys k SET revoked_at = now()
               FROM identities i
              WHERE k.prefix = $1 AND i.id = k.identity_id AND k.revoked_at IS NULL
             RETURNING k.prefix, i.name, i.kind, k.label, k.created_at, k.revoked_at",
            &[&prefix],
        )
        .await?;
    match row {
        Some(r) => Ok(KeyInfo {
            prefix: r.get(0),
            identity: r.get(1),
            kind: r.get(2),
            label: r.get(3),
            created_at: r.get(4),
            revoked_at: r.get(5),
        }),
        None => {
            let exists = client
                .query_opt(
                    "SELECT revoked_at FROM api_keys WHERE prefix = $1",
                    &[&prefix],
                )
                .await?;
            Err(match exists {
                Some(r) => {
                    let at: Option<DateTime<Utc>> = r.get(0);
                    ControlError::Conflict(format!(
                        "key {prefix} was already revoked at {}",
                        at.map(|t| t.to_rfc3339()).unwrap_or_default()
                    ))
                }
                None => ControlError::NotFound(format!(
                    "no key with prefix {prefix:?}; `interlock keys list` shows the prefixes"
                )),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_long_random_and_hash_stably() {
        let a = format!("{KEY_PREFIX}{}", random_token(32));
        let b = format!("{KEY_PREFIX}{}", random_token(32));
        assert_ne!(a, b);
        assert_eq!(a.len(), KEY_PREFIX.len() + 43);
        assert_eq!(hash_key(&a), hash_key(&a));
        assert_ne!(hash_key(&a), hash_key(&b));
        assert_eq!(hash_key(&a).len(), 32);
    }
}
