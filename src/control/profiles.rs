//! Loading the access profile of one identity on one source: the statements of its granted
//! roles, the source's policies and redaction rules, parsed into governance types.

use uuid::Uuid;

use super::roles::{PolicyRuleRow, RedactionRow, RoleStatement};
use super::{ControlError, ControlPool};
use crate::governance::{AccessProfile, Policy, RedactionRule, SourceRole};

/// The profile of `identity` on `source`, or `None` when it holds no role there.
pub async fn load_profile(
    pool: &ControlPool,
    identity: Uuid,
    source: &str,
) -> Result<Option<AccessProfile>, ControlError> {
    let client = pool.get().await?;
    let grants = client
        .query(
            "SELECT role_name FROM role_grants WHERE identity_id = $1 AND source_id = $2 ORDER BY role_name",
            &[&identity, &source],
        )
        .await?;
    if grants.is_empty() {
        return Ok(None);
    }
    let mut roles: Vec<SourceRole> = grants
        .iter()
        .map(|r| SourceRole {
            name: r.get(0),
            statements: Vec::new(),
        })
        .collect();
    let statements = client
        .query(
            "SELECT s.role_name, s.effect, s.action, s.resource FROM role_statements s
               JOIN role_grants g ON g.source_id = s.source_id AND g.role_name = s.role_name
              WHERE g.identity_id = $1 AND g.source_id = $2 ORDER BY s.id",
            &[&identity, &source],
        )
        .await?;
    for r in statements {
        let role: String = r.get(0);
        let statement = RoleStatement {
            effect: r.get(1),
            action: r.get(2),
            resource: r.get(3),
        }
        .to_access()
        .map_err(|e| ControlError::Invalid(format!("role {role}: {e}")))?;
        if let Some(target) = roles.iter_mut().find(|x| x.name == role) {
            target.statements.push(statement);
        }
    }
    Ok(Some(AccessProfile {
        roles,
        policies: load_policies(&client, source).await?,
        redactions: load_redactions(&client, source).await?,
    }))
}

async fn load_policies(
    client: &tokio_postgres::Client,
    source: &str,
) -> Result<Vec<Policy>, ControlError> {
    let rows = client
        .query(
            "SELECT policy_name, rule_name, kind, action, resource, value, condition, mode, message,
                    strategy, keep_last, allow_filter, on_exceed, approvals
               FROM policy_rules WHERE source_id = $1 ORDER BY policy_name, id",
            &[&source],
        )
        .await?;
    let mut policies: Vec<Policy> = Vec::new();
    for r in rows {
        let name: String = r.get("policy_name");
        let bad = |what: String| ControlError::Invalid(format!("policy {name}: {what}"));
        let index = policies
            .iter()
            .find(|p| p.name == name)
            .map_or(0, |p| p.rules.len());
        let rule = PolicyRuleRow::from_stored(&r)
            .and_then(|row| row.to_rule(index))
            .map_err(bad)?;
        match policies.iter_mut().find(|p| p.name == name) {
            Some(p) => p.rules.push(rule),
            None => policies.push(Policy {
                name,
                rules: vec![rule],
            }),
        }
    }
    Ok(policies)
}

async fn load_redactions(
    client: &tokio_postgres::Client,
    source: &str,
) -> Result<Vec<RedactionRule>, ControlError> {
    let rows = client
        .query(
            "SELECT schema_name, table_name, column_name, strategy, keep_last, allow_filter
               FROM redaction_rules WHERE source_id = $1",
            &[&source],
        )
        .await?;
    rows.iter()
        .map(|r| {
            RedactionRow {
                schema: r.get(0),
                table: r.get(1),
                column: r.get(2),
                strategy: r.get(3),
                keep_last: r.get(4),
                allow_filter: r.get(5),
            }
            .to_rule()
        })
        .collect()
}
