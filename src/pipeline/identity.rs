//! `Authorization: Bearer <credential>` → identity. A credential is an InterLock API key
//! (hashed lookup) or, when `[oauth]` is on, an access token from the configured issuer
//! (verified by `crate::oauth`, then mapped to the identity its `identity_claim` names).
//!
//! Both are cached for `identity.cache_ttl_ms`, which therefore bounds how long a revoked
//! key, a revoked identity's tokens or a removed group keeps working on any replica (a
//! token never outlives its `exp`). Concurrent lookups of one key coalesce into one query.

use std::sync::Arc;
use std::time::Duration;

use interlock_actors::audit::AuditHandle;
use moka::future::Cache;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::profiles::ProfileCache;
use crate::control::identities::{identity_for_key, Identity};
use crate::control::keys::{hash_key, KEY_PREFIX};
use crate::control::token_identities;
use crate::control::{ControlError, ControlPool};
use crate::oauth::{OAuth, TokenError, Verified};

/// Who is calling, and with what.
#[derive(Debug, Clone)]
pub struct Principal {
    pub identity: Arc<Identity>,
    /// Set when the credential was an access token.
    pub token: Option<TokenFacts>,
}

/// What an access token said, for scopes and the audit record (never the token itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenFacts {
    pub issuer: String,
    pub subject: String,
    /// Its `exp` plus `oauth.leeway_secs`, seconds since the epoch: it is not used after.
    pub usable_until: Option<i64>,
    /// Whether it carries `oauth.tools_scope` and `oauth.admin_scope`.
    pub tools: bool,
    pub admin: bool,
    /// The token's groups (`oauth.roles_claim`) and claims, for policy conditions.
    pub groups: Vec<String>,
    pub claims: Arc<serde_json::Map<String, serde_json::Value>>,
}

/// What a route needs of a credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    Tools,
    Admin,
}

impl Principal {
    /// Whether the credential may be used for `what` (an API key may, for everything its
    /// identity's kind allows; a token only with the scope).
    pub fn may(&self, what: Use) -> bool {
        self.token.as_ref().is_none_or(|t| match what {
            Use::Tools => t.tools,
            Use::Admin => t.admin,
        })
    }

    /// What the audit record says about the credential (`None` for an API key).
    pub fn credential(&self) -> Option<serde_json::Value> {
        self.token
            .as_ref()
            .map(|t| json!({"type": "oauth", "issuer": t.issuer, "subject": t.subject}))
    }
}

/// Keeps a verified token in the cache no longer than its `exp` (plus the leeway) allows,
/// within the cache's own time-to-live.
struct UntilExpiry;

impl moka::Expiry<[u8; 32], Arc<Principal>> for UntilExpiry {
    fn expire_after_create(
        &self,
        _digest: &[u8; 32],
        principal: &Arc<Principal>,
        _created_at: std::time::Instant,
    ) -> Option<Duration> {
        let until = principal.token.as_ref()?.usable_until?;
        let left = until.saturating_sub(chrono::Utc::now().timestamp());
        Some(Duration::from_secs(u64::try_from(left).unwrap_or(0)))
    }
}

/// The answer for one bearer credential.
#[derive(Debug, Clone)]
pub enum Resolved {
    Caller(Arc<Principal>),
    /// An unknown or revoked API key.
    UnknownKey,
    /// An access token that is not accepted, and why (safe to show: never the token).
    InvalidToken(String),
    /// The identity provider could not be reached to check a token.
    ProviderUnavailable(String),
}

#[derive(Clone)]
pub struct IdentityResolver {
    keys: Cache<Vec<u8>, Option<Arc<Identity>>>,
    tokens: Cache<[u8; 32], Arc<Principal>>,
    control: ControlPool,
    oauth: Option<Arc<OAuth>>,
    audit: Option<AuditHandle>,
    profiles: Option<ProfileCache>,
}

impl IdentityResolver {
    pub fn new(control: ControlPool, ttl: Duration) -> Self {
        Self {
            keys: Cache::builder()
                .max_capacity(100_000)
                .time_to_live(ttl)
                .build(),
            tokens: Cache::builder()
                .max_capacity(100_000)
                .time_to_live(ttl)
                .expire_after(UntilExpiry)
                .build(),
            control,
            oauth: None,
            audit: None,
            profiles: None,
        }
    }

    /// Accepts access tokens verified by `oauth` too; provisioning is audited on `audit`,
    /// and grant changes from groups drop `profiles`.
    pub fn with_oauth(
        mut self,
        oauth: Arc<OAuth>,
        audit: AuditHandle,
        profiles: ProfileCache,
    ) -> Self {
        self.oauth = Some(oauth);
        self.audit = Some(audit);
        self.profiles = Some(profiles);
        self
    }

    /// Resolves a bearer credential.
    pub async fn resolve_bearer(&self, credential: &str) -> Result<Resolved, Arc<ControlError>> {
        match &self.oauth {
            Some(oauth) if !credential.starts_with(KEY_PREFIX) => {
                self.resolve_token(oauth, credential).await
            }
            _ => Ok(match self.resolve(credential).await? {
                Some(identity) => Resolved::Caller(Arc::new(Principal {
                    identity,
                    token: None,
                })),
                None => Resolved::UnknownKey,
            }),
        }
    }

    /// The identity holding this API key, or `None` for an unknown or revoked key.
    pub async fn resolve(&self, key: &str) -> Result<Option<Arc<Identity>>, Arc<ControlError>> {
        let control = self.control.clone();
        let owned = key.to_string();
        self.keys
            .try_get_with(hash_key(key), async move {
                identity_for_key(&control, &owned)
                    .await
                    .map(|i| i.map(Arc::new))
            })
            .await
    }

    async fn resolve_token(
        &self,
        oauth: &OAuth,
        token: &str,
    ) -> Result<Resolved, Arc<ControlError>> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // A cached token is dropped when its `exp` (with the leeway) passes ([`UntilExpiry`]).
        if let Some(known) = self.tokens.get(&digest).await {
            return Ok(Resolved::Caller(known));
        }
        let verified = match oauth.verify(token).await {
            Ok(v) => v,
            Err(TokenError::Invalid(why)) => {
                metrics::counter!("interlock_oauth_tokens_total", "result" => "refused")
                    .increment(1);
                return Ok(Resolved::InvalidToken(why));
            }
            Err(e @ TokenError::KeysUnavailable(_)) => {
                return Ok(Resolved::ProviderUnavailable(e.to_string()))
            }
        };
        let resolved = self.principal(oauth, verified).await?;
        if let Resolved::Caller(principal) = &resolved {
            metrics::counter!("interlock_oauth_tokens_total", "result" => "accepted").increment(1);
            self.tokens.insert(digest, Arc::clone(principal)).await;
        }
        Ok(resolved)
    }

    /// The identity a verified token names: found, or provisioned when allowed; its
    /// revocation checked; its group grants brought in step.
    async fn principal(&self, oauth: &OAuth, v: Verified) -> Result<Resolved, Arc<ControlError>> {
        let found = token_identities::by_name(&self.control, &v.identity)
            .await
            .map_err(Arc::new)?;
        let identity = match found {
            Some(named) => {
                let revoked = named
                    .tokens_revoked_before
                    .is_some_and(|before| v.issued_at.is_none_or(|iat| iat <= before.timestamp()));
                if revoked {
                    return Ok(Resolved::InvalidToken(format!(
                        "tokens of identity {} issued before {} were revoked; sign in again",
                        v.identity,
                        named
                            .tokens_revoked_before
                            .map(|t| t.to_rfc3339())
                            .unwrap_or_default()
                    )));
                }
                named.identity
            }
            None if oauth.settings.auto_provision => self.provision(&v).await?,
            None => {
                return Ok(Resolved::InvalidToken(format!(
                    "no identity named {:?} exists on this gateway; an operator must create it \
                     (interlock keys create, or the admin API) or turn on oauth.auto_provision",
                    v.identity
                )))
            }
        };
        if !oauth.settings.roles_claim.is_empty() {
            self.sync_groups(oauth, &identity, &v.groups).await?;
        }
        Ok(Resolved::Caller(Arc::new(Principal {
            identity: Arc::new(identity),
            token: Some(TokenFacts {
                tools: v.scopes.contains(&oauth.settings.tools_scope),
                admin: v.scopes.contains(&oauth.settings.admin_scope),
                groups: v.groups.clone(),
                claims: Arc::new(v.claims.clone()),
                issuer: v.issuer,
                subject: v.subject,
                usable_until: v.expires_at.map(|exp| {
                    exp.saturating_add(i64::try_from(oauth.settings.leeway_secs).unwrap_or(0))
                }),
            }),
        })))
    }

    /// Creates the agent identity a token named, and audits it.
    async fn provision(&self, v: &Verified) -> Result<Identity, Arc<ControlError>> {
        let created = token_identities::provision(&self.control, &v.identity)
            .await
            .map_err(Arc::new)?;
        let Some(identity) = created else {
            // Provisioned meanwhile by another call or replica.
            return token_identities::by_name(&self.control, &v.identity)
                .await
                .map_err(Arc::new)?
                .map(|n| n.identity)
                .ok_or_else(|| {
                    Arc::new(ControlError::NotFound(format!(
                        "identity {:?} vanished while being provisioned",
                        v.identity
                    )))
                });
        };
        tracing::info!(identity = %identity.name, issuer = %v.issuer, "identity provisioned from an access token");
        if let Some(audit) = &self.audit {
            let mut draft = super::AuditDraft::new(
                &uuid::Uuid::new_v4().to_string(),
                "oauth",
                None,
                "oauth.identity.provision",
            );
            draft.identity = Some((identity.id, identity.name.clone()));
            draft.action = Some("admin");
            draft.decision = json!({"verdict": "allowed", "kind": "agent",
                                    "credential": {"type": "oauth", "issuer": v.issuer, "subject": v.subject}});
            if let Err(e) = crate::call::audit::append(
                audit,
                draft,
                &super::Outcome::Json(serde_json::Value::Null),
            )
            .await
            {
                tracing::error!(error = %e, "provisioning an identity could not be audited");
            }
        }
        // Nothing cached anywhere names an identity that did not exist: no fleet notice.
        Ok(identity)
    }

    /// Brings the identity's group-derived grants in step with the token's groups.
    async fn sync_groups(
        &self,
        oauth: &OAuth,
        identity: &Identity,
        groups: &[String],
    ) -> Result<(), Arc<ControlError>> {
        let wanted: Vec<(String, String)> = oauth
            .settings
            .group_roles
            .iter()
            .filter(|g| groups.contains(&g.group))
            .map(|g| (g.source.clone(), g.role.clone()))
            .collect();
        let changed = token_identities::sync_claimed_grants(&self.control, identity.id, &wanted)
            .await
            .map_err(Arc::new)?;
        if changed {
            tracing::info!(identity = %identity.name, ?wanted, "grants from the token's groups changed");
            if let Some(profiles) = &self.profiles {
                profiles.invalidate_all();
            }
            crate::fleet::announce(&self.control, crate::fleet::Changed::Grants).await;
        }
        Ok(())
    }

    /// Forgets every cached key and token (after keys or identities changed, on any
    /// replica).
    pub fn invalidate_all(&self) {
        self.keys.invalidate_all();
        self.tokens.invalidate_all();
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
