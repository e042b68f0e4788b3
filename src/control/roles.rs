//! Source roles, grants, approver scopes, policies and redaction rules.
//!
//! These functions take any client (pool connection or transaction) so a policy file can be
//! applied atomically. Statements are stored as text (`effect`, `action`, `resource`) and
//! parsed by the governance layer, which owns their meaning.

use deadpool_postgres::GenericClient;
use serde::{Deserialize, Serialize};

use super::{conflict_on_unique, ControlError};

pub const ACTIONS: [&str; 4] = ["read", "write", "describe", "discover"];

/// One allow or deny statement of a role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleStatement {
    pub effect: String,
    pub action: String,
    pub resource: String,
}

impl RoleStatement {
    /// Parses `"read public.customers"` with the given effect.
    pub fn parse(effect: &str, text: &str) -> Result<Self, ControlError> {
        let (action, resource) = text.trim().split_once(char::is_whitespace).ok_or_else(|| {
            ControlError::Invalid(format!(
                "statement {text:?} must be an action and a resource, e.g. \"read public.customers\""
            ))
        })?;
        let s = RoleStatement {
            effect: effect.to_string(),
            action: action.to_string(),
            resource: resource.trim().to_string(),
        };
        s.validate()?;
        Ok(s)
    }

    pub fn validate(&self) -> Result<(), ControlError> {
        if !["allow", "deny"].contains(&self.effect.as_str()) {
            return Err(ControlError::Invalid(format!(
                "effect {:?} must be allow or deny",
                self.effect
            )));
        }
        if !ACTIONS.contains(&self.action.as_str()) {
            return Err(ControlError::Invalid(format!(
                "action {:?} must be one of read, write, describe, discover",
                self.action
            )));
        }
        self.resource
            .parse::<crate::governance::ResourcePattern>()
            .map(|_| ())
            .map_err(|e| ControlError::Invalid(format!("resource {:?}: {e}", self.resource)))
    }
}

/// Creates the role or, when it exists, replaces its description and statements.
pub async fn put_role(
    client: &impl GenericClient,
    source: &str,
    name: &str,
    description: &str,
    statements: &[RoleStatement],
) -> Result<(), ControlError> {
    for s in statements {
        s.validate()?;
    }
    client
        .execute(
            "INSERT INTO source_roles (source_id, name, description) VALUES ($1, $2, $3)
             ON CONFLICT (source_id, name) DO UPDATE SET description = EXCLUDED.description",
            &[&source, &name, &description],
        )
        .await
        .map_err(|e| conflict_on_unique(e, || format!("role {name:?} on {source:?}")))?;
    client
        .execute(
            "DELETE FROM role_statements WHERE source_id = $1 AND role_name = $2",
            &[&source, &name],
        )
        .await?;
    for s in statements {
        client
            .execute(
                "INSERT INTO role_statements (source_id, role_name, effect, action, resource)
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                &[&source, &name, &s.effect, &s.action, &s.resource],
            )
            .await?;
    }
    Ok(())
}

/// Grants a role on a source to an identity (idempotent).
pub async fn grant_role(
    client: &impl GenericClient,
    identity: &str,
    source: &str,
    role: &str,
) -> Result<(), ControlError> {
    let n = client
        .execute(
            "INSERT INTO role_grants (identity_id, source_id, role_name)
             SELECT i.id, r.source_id, r.name FROM identities i, source_roles r
              WHERE i.name = $1 AND r.source_id = $2 AND r.name = $3
             ON CONFLICT DO NOTHING",
            &[&identity, &source, &role],
        )
        .await?;
    if n == 0 {
        ensure_grant_target_exists(client, identity, source, role).await?;
    }
    Ok(())
}

async fn ensure_grant_target_exists(
    client: &impl GenericClient,
    identity: &str,
    source: &str,
    role: &str,
) -> Result<(), ControlError> {
    let i = client
        .query_opt("SELECT 1 FROM identities WHERE name = $1", &[&identity])
        .await?;
    if i.is_none() {
        return Err(ControlError::NotFound(format!(
            "no identity named {identity:?}"
        )));
    }
    let r = client
        .query_opt(
            "SELECT 1 FROM source_roles WHERE source_id = $1 AND name = $2",
            &[&source, &role],
        )
        .await?;
    if r.is_none() {
        return Err(ControlError::NotFound(format!(
            "no role {role:?} on source {source:?}"
        )));
    }
    Ok(())
}

/// Revokes a role grant; returns whether one existed.
pub async fn revoke_role(
    client: &impl GenericClient,
    identity: &str,
    source: &str,
    role: &str,
) -> Result<bool, ControlError> {
    let n = client
        .execute(
            "DELETE FROM role_grants g USING identities i
              WHERE g.identity_id = i.id AND i.name = $1 AND g.source_id = $2 AND g.role_name = $3",
            &[&identity, &source, &role],
        )
        .await?;
    Ok(n > 0)
}

/// Allows an approver identity to decide writes on a source.
pub async fn add_approver_scope(
    client: &impl GenericClient,
    identity: &str,
    source: &str,
) -> Result<(), ControlError> {
    let n = client
        .execute(
            "INSERT INTO approver_scopes (identity_id, source_id)
             SELECT i.id, s.id FROM identities i, sources s
              WHERE i.name = $1 AND i.kind = 'approver' AND s.id = $2
             ON CONFLICT DO NOTHING",
            &[&identity, &source],
        )
        .await?;
    if n == 0 {
        let exists = client
            .query_opt(
                "SELECT 1 FROM approver_scopes a JOIN identities i ON i.id = a.identity_id
                  WHERE i.name = $1 AND a.source_id = $2",
                &[&identity, &source],
            )
            .await?;
        if exists.is_none() {
            return Err(ControlError::NotFound(format!(
                "cannot scope {identity:?} to {source:?}: the identity must exist as an approver and the source must exist"
            )));
        }
    }
    Ok(())
}

/// The sources an approver identity may decide writes on, in order.
pub async fn approver_scopes(
    client: &impl GenericClient,
    identity_id: uuid::Uuid,
) -> Result<Vec<String>, ControlError> {
    let rows = client
        .query(
            "SELECT source_id FROM approver_scopes WHERE identity_id = $1 ORDER BY source_id",
            &[&identity_id],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// One role grant, by identity name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantRow {
    pub identity: String,
    pub source: String,
    pub role: String,
}

/// Every role grant, ordered by identity, source and role.
pub async fn list_grants(client: &impl GenericClient) -> Result<Vec<GrantRow>, ControlError> {
    let rows = client
        .query(
            "SELECT i.name, g.source_id, g.role_name FROM role_grants g JOIN identities i ON i.id = g.identity_id
              ORDER BY 1, 2, 3",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| GrantRow {
            identity: r.get(0),
            source: r.get(1),
            role: r.get(2),
        })
        .collect())
}

/// One rule of a named policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PolicyRuleRow {
    Deny { action: String, resource: String },
    MaxRows { value: i64 },
    ApprovalsRequired { resource: String, value: i64 },
}

/// Replaces every rule of the named policy on a source.
pub async fn put_policy(
    client: &impl GenericClient,
    source: &str,
    name: &str,
    rules: &[PolicyRuleRow],
) -> Result<(), ControlError> {
    client
        .execute(
            "DELETE FROM policy_rules WHERE source_id = $1 AND policy_name = $2",
            &[&source, &name],
        )
        .await?;
    for rule in rules {
        let (kind, action, resource, value): (&str, Option<&str>, Option<&str>, Option<i64>) =
            match rule {
                PolicyRuleRow::Deny { action, resource } => {
                    RoleStatement {
                        effect: "deny".into(),
                        action: action.clone(),
                        resource: resource.clone(),
                    }
                    .validate()?;
                    ("deny", Some(action), Some(resource), None)
                }
                PolicyRuleRow::MaxRows { value } => ("max_rows", None, None, Some(*value)),
                PolicyRuleRow::ApprovalsRequired { resource, value } => {
                    resource
                        .parse::<crate::governance::ResourcePattern>()
                        .map_err(|e| {
                            ControlError::Invalid(format!("resource {resource:?}: {e}"))
                        })?;
                    ("approvals_required", None, Some(resource), Some(*value))
                }
            };
        client
            .execute(
                "INSERT INTO policy_rules (source_id, policy_name, kind, action, resource, value)
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[&source, &name, &kind, &action, &resource, &value],
            )
            .await
            .map_err(|e| conflict_on_unique(e, || format!("policy {name:?}")))?;
    }
    Ok(())
}

/// A redaction rule on one column of a source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedactionRow {
    pub schema: String,
    pub table: String,
    pub column: String,
    pub strategy: String,
    pub keep_last: i32,
    pub allow_filter: bool,
}

/// Creates or replaces the redaction rule of one column.
pub async fn put_redaction(
    client: &impl GenericClient,
    source: &str,
    r: &RedactionRow,
) -> Result<(), ControlError> {
    client
        .execute(
            "INSERT INTO redaction_rules (source_id, schema_name, table_name, column_name, strategy, keep_last, allow_filter)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (source_id, schema_name, table_name, column_name) DO UPDATE
                SET strategy = EXCLUDED.strategy, keep_last = EXCLUDED.keep_last,
                    allow_filter = EXCLUDED.allow_filter",
            &[&source, &r.schema, &r.table, &r.column, &r.strategy, &r.keep_last, &r.allow_filter],
        )
        .await
        .map_err(|e| conflict_on_unique(e, || format!("redaction on {}.{}.{}", r.schema, r.table, r.column)))?;
    Ok(())
}
