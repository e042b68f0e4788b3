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

    /// The statement as the governance layer reads it.
    pub fn to_access(&self) -> Result<crate::governance::AccessStatement, ControlError> {
        let text = format!("{} {} {}", self.effect, self.action, self.resource);
        text.parse()
            .map_err(|e| ControlError::Invalid(format!("statement {text:?}: {e}")))
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

/// What a policy rule does, as an access file and the control database spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    Deny,
    MaxRows,
    ApprovalsRequired,
    RequireApproval,
    Mask,
    MaxCost,
    MaxPlanRows,
    MaxPlanBytes,
    ApprovalsAboveCost,
}

impl RuleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleKind::Deny => "deny",
            RuleKind::MaxRows => "max_rows",
            RuleKind::ApprovalsRequired => "approvals_required",
            RuleKind::RequireApproval => "require_approval",
            RuleKind::Mask => "mask",
            RuleKind::MaxCost => "max_cost",
            RuleKind::MaxPlanRows => "max_plan_rows",
            RuleKind::MaxPlanBytes => "max_plan_bytes",
            RuleKind::ApprovalsAboveCost => "approvals_above_cost",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [
            RuleKind::Deny,
            RuleKind::MaxRows,
            RuleKind::ApprovalsRequired,
            RuleKind::RequireApproval,
            RuleKind::Mask,
            RuleKind::MaxCost,
            RuleKind::MaxPlanRows,
            RuleKind::MaxPlanBytes,
            RuleKind::ApprovalsAboveCost,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// One rule of a named policy (docs/policy-conditions.md).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRuleRow {
    pub kind: Option<RuleKind>,
    /// Unique within the policy; `1`, `2`, … by position when not given.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub resource: Option<String>,
    #[serde(default)]
    pub value: Option<i64>,
    /// A CEL condition over the call's facts.
    #[serde(default)]
    pub when: Option<String>,
    /// `enforce` (default) or `report`.
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// For `mask`: redact, partial, hash or null.
    #[serde(default)]
    pub strategy: Option<String>,
    #[serde(default)]
    pub keep_last: Option<i32>,
    #[serde(default)]
    pub allow_filter: Option<bool>,
    /// For `max_cost`, `max_plan_rows` and `max_plan_bytes`: `refuse` (default) or `queue`.
    #[serde(default)]
    pub on_exceed: Option<String>,
    /// Approvals an over-limit read queued by `on_exceed = "queue"` needs (default 1), or a
    /// write above an `approvals_above_cost` rule's cost.
    #[serde(default)]
    pub approvals: Option<i32>,
}

/// A rule's name when the file gives none: its position, from 1.
fn default_rule_name(index: usize) -> String {
    (index + 1).to_string()
}

impl PolicyRuleRow {
    /// The rule's name in the policy.
    pub fn name_at(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| default_rule_name(index))
    }

    /// The governance rule this row spells, compiling its condition; the error names what
    /// is wrong (the caller adds the policy and the rule).
    pub fn to_rule(&self, index: usize) -> Result<crate::governance::Rule, String> {
        use crate::governance::cost::{CostMeasure, OnExceed};
        use crate::governance::{Action, MaskStrategy, PolicyRule, ResourcePattern, RuleMode};
        let kind = self.kind.ok_or(
            "a rule needs a kind: deny, max_rows, approvals_required, require_approval, mask, \
             max_cost, max_plan_rows, max_plan_bytes or approvals_above_cost",
        )?;
        let name = self.name_at(index);
        if !(1..=63).contains(&name.len())
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        {
            return Err(format!(
                "rule name {name:?} must be 1–63 of a-z, 0-9, _ and -"
            ));
        }
        let pattern = || -> Result<ResourcePattern, String> {
            let r = self
                .resource
                .as_deref()
                .ok_or(format!("a {} rule needs a resource", kind.as_str()))?;
            r.parse().map_err(|e| format!("resource {r:?}: {e}"))
        };
        let value = |lo: i64, hi: i64| -> Result<i64, String> {
            match self.value {
                Some(v) if (lo..=hi).contains(&v) => Ok(v),
                Some(v) => Err(format!(
                    "value {v} of a {} rule must be {lo}–{hi}",
                    kind.as_str()
                )),
                None => Err(format!("a {} rule needs a value", kind.as_str())),
            }
        };
        let unused = |field: &str, set: bool| -> Result<(), String> {
            if set {
                Err(format!("a {} rule takes no {field}", kind.as_str()))
            } else {
                Ok(())
            }
        };
        let mask_fields =
            self.strategy.is_some() || self.keep_last.is_some() || self.allow_filter.is_some();
        if kind != RuleKind::Mask {
            unused("strategy, keep_last or allow_filter", mask_fields)?;
        }
        let measure = match kind {
            RuleKind::MaxCost => Some(CostMeasure::Cost),
            RuleKind::MaxPlanRows => Some(CostMeasure::Rows),
            RuleKind::MaxPlanBytes => Some(CostMeasure::Bytes),
            _ => None,
        };
        if measure.is_none() {
            unused("on_exceed", self.on_exceed.is_some())?;
        }
        if measure.is_none() && kind != RuleKind::ApprovalsAboveCost {
            unused("approvals", self.approvals.is_some())?;
        }
        let approvals = |default: Option<u32>| -> Result<u32, String> {
            match (self.approvals, default) {
                (Some(n), _) if (1..=5).contains(&n) => Ok(n.unsigned_abs()),
                (Some(n), _) => Err(format!(
                    "approvals {n} of a {} rule must be 1–5",
                    kind.as_str()
                )),
                (None, Some(d)) => Ok(d),
                (None, None) => Err(format!("a {} rule needs approvals", kind.as_str())),
            }
        };
        let effect = match kind {
            RuleKind::Deny => {
                unused("value", self.value.is_some())?;
                match (&self.action, &self.resource) {
                    (Some(action), Some(_)) => PolicyRule::Deny {
                        action: action.parse::<Action>().map_err(|_| {
                            format!(
                                "action {action:?} must be one of read, write, describe, discover"
                            )
                        })?,
                        resource: pattern()?,
                    },
                    (None, None) if self.when.is_some() => PolicyRule::DenyCall,
                    (None, None) => {
                        return Err(
                            "a deny rule needs an action and a resource, or a condition (`when`)"
                                .into(),
                        )
                    }
                    _ => return Err("a deny rule takes an action and a resource together".into()),
                }
            }
            RuleKind::MaxRows => {
                unused(
                    "action or resource",
                    self.action.is_some() || self.resource.is_some(),
                )?;
                PolicyRule::MaxRows(value(1, i64::MAX)?.unsigned_abs())
            }
            RuleKind::ApprovalsRequired => {
                unused("action", self.action.is_some())?;
                PolicyRule::ApprovalsRequired {
                    resource: pattern()?,
                    approvals: u32::try_from(value(1, 5)?).map_err(|e| e.to_string())?,
                }
            }
            RuleKind::RequireApproval => {
                unused(
                    "action or resource",
                    self.action.is_some() || self.resource.is_some(),
                )?;
                let n = match self.value {
                    None => 1,
                    Some(_) => value(1, 5)?,
                };
                PolicyRule::RequireApproval(u32::try_from(n).map_err(|e| e.to_string())?)
            }
            RuleKind::MaxCost | RuleKind::MaxPlanRows | RuleKind::MaxPlanBytes => {
                unused(
                    "action or resource",
                    self.action.is_some() || self.resource.is_some(),
                )?;
                let on_exceed = match self.on_exceed.as_deref() {
                    None | Some("refuse") => {
                        unused(
                            "approvals (only with on_exceed = \"queue\")",
                            self.approvals.is_some(),
                        )?;
                        OnExceed::Refuse
                    }
                    Some("queue") => OnExceed::Queue {
                        approvals: approvals(Some(1))?,
                    },
                    Some(other) => {
                        return Err(format!("on_exceed {other:?} must be refuse or queue"))
                    }
                };
                PolicyRule::CostLimit {
                    measure: measure.unwrap_or(CostMeasure::Cost),
                    limit: value(1, i64::MAX)?.unsigned_abs(),
                    on_exceed,
                }
            }
            RuleKind::ApprovalsAboveCost => {
                unused(
                    "action or resource",
                    self.action.is_some() || self.resource.is_some(),
                )?;
                PolicyRule::ApprovalsAboveCost {
                    cost: value(1, i64::MAX)?.unsigned_abs(),
                    approvals: approvals(None)?,
                }
            }
            RuleKind::Mask => {
                unused(
                    "action or value",
                    self.action.is_some() || self.value.is_some(),
                )?;
                let strategy = match self.strategy.as_deref() {
                    Some("redact") => MaskStrategy::Redact,
                    Some("partial") => MaskStrategy::Partial {
                        keep_last: usize::try_from(self.keep_last.unwrap_or(4))
                            .map_err(|_| "keep_last must not be negative".to_string())?,
                    },
                    Some("hash") => MaskStrategy::Hash,
                    Some("null") => MaskStrategy::Null,
                    Some(other) => {
                        return Err(format!(
                            "mask strategy {other:?} must be redact, partial, hash or null"
                        ))
                    }
                    None => {
                        return Err(
                            "a mask rule needs a strategy: redact, partial, hash or null".into(),
                        )
                    }
                };
                PolicyRule::Mask {
                    resource: pattern()?,
                    strategy,
                    allow_filter: self.allow_filter.unwrap_or(false),
                }
            }
        };
        let mode = match self.mode.as_deref() {
            None | Some("enforce") => RuleMode::Enforce,
            Some("report") => RuleMode::Report,
            Some(other) => return Err(format!("mode {other:?} must be enforce or report")),
        };
        let costed = measure.is_some() || kind == RuleKind::ApprovalsAboveCost;
        if costed && mode == RuleMode::Report {
            return Err(format!(
                "a {} rule cannot be report-only: its outcome is known only once the source \
                 has planned the statement, after the decision",
                kind.as_str()
            ));
        }
        let when = match &self.when {
            Some(text) => Some(std::sync::Arc::new(
                crate::governance::condition::Condition::compile(text)
                    .map_err(|e| format!("condition {e}"))?,
            )),
            None => None,
        };
        let reads_plan = when.as_ref().is_some_and(|c| c.reads_plan());
        let decides_call = matches!(
            effect,
            PolicyRule::DenyCall | PolicyRule::RequireApproval(_)
        );
        if reads_plan && !decides_call {
            return Err(format!(
                "a condition over plan.… is decided once the source has planned the read, \
                 after the statement's decision: it may only deny the call (a deny rule \
                 without action and resource) or require approval, not a {} rule",
                kind.as_str()
            ));
        }
        Ok(crate::governance::Rule {
            name,
            effect,
            when,
            mode,
            message: self.message.clone(),
        })
    }

    /// The row as stored (`policy_rules`).
    pub fn from_stored(r: &tokio_postgres::Row) -> Result<Self, String> {
        let kind: String = r.get("kind");
        Ok(PolicyRuleRow {
            kind: Some(RuleKind::parse(&kind).ok_or(format!("unknown rule kind {kind}"))?),
            name: Some(r.get("rule_name")),
            action: r.get("action"),
            resource: r.get("resource"),
            value: r.get("value"),
            when: r.get("condition"),
            mode: Some(r.get("mode")),
            message: r.get("message"),
            strategy: r.get("strategy"),
            keep_last: r.get("keep_last"),
            allow_filter: r.get::<_, bool>("allow_filter").then_some(true),
            on_exceed: r.get("on_exceed"),
            approvals: r.get("approvals"),
        })
    }
}

/// Every rule of a policy as the governance layer reads it, conditions compiled; the
/// error names the policy, the rule and its position in the file.
pub fn check_policy(
    name: &str,
    rules: &[PolicyRuleRow],
) -> Result<Vec<crate::governance::Rule>, ControlError> {
    let mut names = std::collections::BTreeSet::new();
    let mut checked = Vec::with_capacity(rules.len());
    for (i, rule) in rules.iter().enumerate() {
        let rule_name = rule.name_at(i);
        checked.push(rule.to_rule(i).map_err(|e| {
            ControlError::Invalid(format!(
                "policy {name:?} rule {rule_name:?} (rules[{i}]): {e}"
            ))
        })?);
        if !names.insert(rule_name.clone()) {
            return Err(ControlError::Invalid(format!(
                "policy {name:?} has two rules named {rule_name:?}"
            )));
        }
    }
    Ok(checked)
}

/// Replaces every rule of the named policy on a source. Every rule is checked (its
/// condition compiled) before anything is written; an error names the policy and rule.
pub async fn put_policy(
    client: &impl GenericClient,
    source: &str,
    name: &str,
    rules: &[PolicyRuleRow],
) -> Result<(), ControlError> {
    check_policy(name, rules)?;
    client
        .execute(
            "DELETE FROM policy_rules WHERE source_id = $1 AND policy_name = $2",
            &[&source, &name],
        )
        .await?;
    for (i, rule) in rules.iter().enumerate() {
        let kind = rule.kind.map(RuleKind::as_str);
        let mode = rule.mode.as_deref().unwrap_or("enforce");
        client
            .execute(
                "INSERT INTO policy_rules (source_id, policy_name, rule_name, kind, action, resource, value,
                                           condition, mode, message, strategy, keep_last, allow_filter,
                                           on_exceed, approvals)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
                &[
                    &source,
                    &name,
                    &rule.name_at(i),
                    &kind,
                    &rule.action,
                    &rule.resource,
                    &rule.value,
                    &rule.when,
                    &mode,
                    &rule.message,
                    &rule.strategy,
                    &rule.keep_last,
                    &rule.allow_filter.unwrap_or(false),
                    &rule.on_exceed,
                    &rule.approvals,
                ],
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

impl RedactionRow {
    /// The rule as the governance layer reads it.
    pub fn to_rule(&self) -> Result<crate::governance::RedactionRule, ControlError> {
        use crate::governance::MaskStrategy;
        Ok(crate::governance::RedactionRule {
            schema: self.schema.clone(),
            table: self.table.clone(),
            column: self.column.clone(),
            strategy: match self.strategy.as_str() {
                "redact" => MaskStrategy::Redact,
                "partial" => MaskStrategy::Partial {
                    keep_last: usize::try_from(self.keep_last).unwrap_or(0),
                },
                "hash" => MaskStrategy::Hash,
                "null" => MaskStrategy::Null,
                other => {
                    return Err(ControlError::Invalid(format!(
                        "redaction strategy {other:?} must be redact, partial, hash or null"
                    )))
                }
            },
            allow_filter: self.allow_filter,
        })
    }
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
