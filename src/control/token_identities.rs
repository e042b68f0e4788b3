//! The control-database side of identities reached by OAuth access tokens: looking one up
//! by name with its token revocation, provisioning it on first use, keeping the grants
//! derived from its groups in step, and revoking its tokens.

use chrono::{DateTime, Utc};

use super::identities::{from_row, Identity, IdentityKind};
use super::{ControlError, ControlPool};

/// An identity and the moment before which its tokens are revoked.
pub struct Named {
    pub identity: Identity,
    pub tokens_revoked_before: Option<DateTime<Utc>>,
}

pub async fn by_name(pool: &ControlPool, name: &str) -> Result<Option<Named>, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            "SELECT id, name, kind, rate_per_second, burst, cost_per_second, cost_burst, created_at, tokens_revoked_before
               FROM identities WHERE name = $1",
            &[&name],
        )
        .await?;
    row.map(|r| {
        Ok(Named {
            identity: from_row(&r)?,
            tokens_revoked_before: r.get("tokens_revoked_before"),
        })
    })
    .transpose()
}

/// Creates the agent identity `name` (a token named it and `oauth.auto_provision` is on);
/// `None` when it already existed (another replica provisioned it first).
pub async fn provision(pool: &ControlPool, name: &str) -> Result<Option<Identity>, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            "INSERT INTO identities (id, name, kind) VALUES ($1, $2, $3)
             ON CONFLICT (name) DO NOTHING
             RETURNING id, name, kind, rate_per_second, burst, cost_per_second, cost_burst, created_at",
            &[&uuid::Uuid::new_v4(), &name, &IdentityKind::Agent.as_str()],
        )
        .await?;
    row.as_ref().map(from_row).transpose()
}

/// Makes the identity's grants that came from its groups exactly `wanted` (source, role)
/// pairs whose role exists; grants made by operators are kept. Returns whether anything
/// changed.
pub async fn sync_claimed_grants(
    pool: &ControlPool,
    identity: uuid::Uuid,
    wanted: &[(String, String)],
) -> Result<bool, ControlError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let sources: Vec<&str> = wanted.iter().map(|(s, _)| s.as_str()).collect();
    let roles: Vec<&str> = wanted.iter().map(|(_, r)| r.as_str()).collect();
    let removed = tx
        .execute(
            "DELETE FROM role_grants g
              WHERE g.identity_id = $1 AND g.via_claim
                AND NOT EXISTS (SELECT 1 FROM unnest($2::text[], $3::text[]) AS w(source, role)
                                 WHERE w.source = g.source_id AND w.role = g.role_name)",
            &[&identity, &sources, &roles],
        )
        .await?;
    let added = tx
        .execute(
            "INSERT INTO role_grants (identity_id, source_id, role_name, via_claim)
             SELECT $1, r.source_id, r.name, true
               FROM unnest($2::text[], $3::text[]) AS w(source, role)
               JOIN source_roles r ON r.source_id = w.source AND r.name = w.role
             ON CONFLICT DO NOTHING",
            &[&identity, &sources, &roles],
        )
        .await?;
    tx.commit().await?;
    Ok(removed + added > 0)
}

/// Refuses every token of `name` issued until now. Returns when, or `NotFound`.
pub async fn revoke_tokens(pool: &ControlPool, name: &str) -> Result<DateTime<Utc>, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            "UPDATE identities SET tokens_revoked_before = now() WHERE name = $1
             RETURNING tokens_revoked_before",
            &[&name],
        )
        .await?
        .ok_or_else(|| ControlError::NotFound(format!("no identity named {name:?}")))?;
    Ok(row.get(0))
}
