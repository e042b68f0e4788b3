//! Declarative access files: identities, roles, grants, approver scopes, policies and
//! redactions for one or more sources, applied in one transaction with
//! `interlock policy apply FILE`. The demo and the test fixtures use the same files and the
//! same code path as operators.
//!
//! ```toml
//! [[identities]]
//! name = "demo-agent"
//! kind = "agent"
//! rate = "1000/s"
//! cost_budget = "200000/s"  # planner cost units per second on each source
//! cost_burst = 1000000
//!
//! [[roles]]
//! source = "shop"
//! name = "analyst"
//! allow = ["read public.customers", "write public.orders"]
//! deny = ["read hr.*"]
//!
//! [[grants]]
//! identity = "demo-agent"
//! source = "shop"
//! roles = ["analyst"]
//!
//! [[approvers]]
//! identity = "demo-approver"
//! sources = ["shop"]
//!
//! [[redactions]]
//! source = "shop"
//! column = "public.customers.email"
//! strategy = "partial"      # redact | partial | hash | null
//! keep_last = 4
//!
//! [[policies]]
//! source = "shop"
//! name = "orders-two-approvers"
//! rules = [{ kind = "approvals_required", resource = "public.orders", value = 2 }]
//!
//! [[policies]]
//! source = "shop"
//! name = "cost"
//! rules = [{ kind = "max_cost", value = 50000, when = "'analyst' in caller.roles" }]
//! ```
//!
//! Applying is idempotent: a role or policy named in the file is replaced as a whole;
//! grants, scopes and redactions are added or updated, never removed.

use serde::Deserialize;

use super::identities::{CostBudget, IdentityKind, RateLimit};
use super::roles::{self, PolicyRuleRow, RedactionRow, RoleStatement};
use super::{ControlError, ControlPool};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessFile {
    #[serde(default)]
    pub identities: Vec<IdentityEntry>,
    #[serde(default)]
    pub roles: Vec<RoleEntry>,
    #[serde(default)]
    pub grants: Vec<GrantEntry>,
    #[serde(default)]
    pub approvers: Vec<ApproverEntry>,
    #[serde(default)]
    pub redactions: Vec<RedactionEntry>,
    #[serde(default)]
    pub policies: Vec<PolicyEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdentityEntry {
    pub name: String,
    pub kind: IdentityKind,
    pub rate: Option<String>,
    pub burst: Option<u32>,
    /// Planner cost units per second the identity may spend on each source, e.g.
    /// `"50000/s"` (cost admission).
    pub cost_budget: Option<String>,
    /// The most cost units it may spend at once (default: one second's worth).
    pub cost_burst: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleEntry {
    pub source: String,
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantEntry {
    pub identity: String,
    pub source: String,
    pub roles: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApproverEntry {
    pub identity: String,
    pub sources: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactionEntry {
    pub source: String,
    /// `schema.table.column`
    pub column: String,
    pub strategy: String,
    #[serde(default = "default_keep_last")]
    pub keep_last: i32,
    #[serde(default)]
    pub allow_filter: bool,
}

fn default_keep_last() -> i32 {
    4
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyEntry {
    pub source: String,
    pub name: String,
    pub rules: Vec<PolicyRuleRow>,
}

/// What an application changed, for the operator's confirmation.
#[derive(Debug, Default, serde::Serialize)]
pub struct Applied {
    pub identities: usize,
    pub roles: usize,
    pub grants: usize,
    pub approver_scopes: usize,
    pub redactions: usize,
    pub policies: usize,
}

impl IdentityEntry {
    /// The identity's rate limit, when the file sets one.
    pub fn rate_limit(&self) -> Result<Option<RateLimit>, ControlError> {
        let rate = self
            .rate
            .as_deref()
            .map(str::parse::<RateLimit>)
            .transpose()
            .map_err(ControlError::Invalid)?;
        Ok(rate.map(|mut r| {
            if let Some(b) = self.burst {
                r.burst = b;
            }
            r
        }))
    }
}

impl IdentityEntry {
    /// The identity's cost budget, when the file sets one.
    pub fn cost_budget(&self) -> Result<Option<CostBudget>, ControlError> {
        let Some(text) = self.cost_budget.as_deref() else {
            if self.cost_burst.is_some() {
                return Err(ControlError::Invalid(format!(
                    "identity {:?}: cost_burst needs a cost_budget",
                    self.name
                )));
            }
            return Ok(None);
        };
        let mut budget: CostBudget = text
            .parse()
            .map_err(|e| ControlError::Invalid(format!("identity {:?}: {e}", self.name)))?;
        if let Some(burst) = self.cost_burst {
            if !(burst.is_finite() && burst >= 1.0) {
                return Err(ControlError::Invalid(format!(
                    "identity {:?}: cost_burst {burst} must be at least 1",
                    self.name
                )));
            }
            budget.burst = burst;
        }
        Ok(Some(budget))
    }
}

impl RoleEntry {
    /// The role's statements, allows first, each checked.
    pub fn statements(&self) -> Result<Vec<RoleStatement>, ControlError> {
        let allow = self.allow.iter().map(|s| RoleStatement::parse("allow", s));
        let deny = self.deny.iter().map(|s| RoleStatement::parse("deny", s));
        allow.chain(deny).collect()
    }
}

impl RedactionEntry {
    /// The rule as stored, checked.
    pub fn to_row(&self) -> Result<RedactionRow, ControlError> {
        let parts: Vec<&str> = self.column.split('.').collect();
        let [schema, table, column] = parts.as_slice() else {
            return Err(ControlError::Invalid(format!(
                "redaction column {:?} must be schema.table.column",
                self.column
            )));
        };
        if !["redact", "partial", "hash", "null"].contains(&self.strategy.as_str()) {
            return Err(ControlError::Invalid(format!(
                "redaction strategy {:?} must be redact, partial, hash or null",
                self.strategy
            )));
        }
        Ok(RedactionRow {
            schema: schema.to_string(),
            table: table.to_string(),
            column: column.to_string(),
            strategy: self.strategy.clone(),
            keep_last: self.keep_last,
            allow_filter: self.allow_filter,
        })
    }
}

impl AccessFile {
    pub fn parse(text: &str) -> Result<Self, ControlError> {
        toml::from_str(text).map_err(|e| ControlError::Invalid(format!("access file: {e}")))
    }
}

/// Applies the file in one transaction: all of it or nothing.
pub async fn apply(pool: &ControlPool, file: &AccessFile) -> Result<Applied, ControlError> {
    let mut client = pool.get().await?;
    let tx = client.transaction().await?;
    let mut applied = Applied::default();
    for i in &file.identities {
        let rate = i.rate_limit()?;
        let per_second = rate.map(|r| r.per_second);
        let burst = rate.map(|r| i32::try_from(r.burst).unwrap_or(i32::MAX));
        let cost = i.cost_budget()?;
        let (cost_per_second, cost_burst) = (cost.map(|c| c.per_second), cost.map(|c| c.burst));
        let row = tx
            .query_one(
                "INSERT INTO identities (id, name, kind, rate_per_second, burst, cost_per_second, cost_burst)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (name) DO UPDATE SET rate_per_second = EXCLUDED.rate_per_second, burst = EXCLUDED.burst,
                        cost_per_second = EXCLUDED.cost_per_second, cost_burst = EXCLUDED.cost_burst
                 RETURNING kind",
                &[&uuid::Uuid::new_v4(), &i.name, &i.kind.as_str(), &per_second, &burst, &cost_per_second, &cost_burst],
            )
            .await
            .map_err(|e| super::conflict_on_unique(e, || format!("identity {:?}", i.name)))?;
        let kind: String = row.get(0);
        if kind != i.kind.as_str() {
            return Err(ControlError::Conflict(format!(
                "identity {:?} exists as {kind}, not {}",
                i.name, i.kind
            )));
        }
        applied.identities += 1;
    }
    for r in &file.roles {
        let statements = r.statements()?;
        roles::put_role(&tx, &r.source, &r.name, &r.description, &statements).await?;
        applied.roles += 1;
    }
    for g in &file.grants {
        for role in &g.roles {
            roles::grant_role(&tx, &g.identity, &g.source, role).await?;
            applied.grants += 1;
        }
    }
    for a in &file.approvers {
        for source in &a.sources {
            roles::add_approver_scope(&tx, &a.identity, source).await?;
            applied.approver_scopes += 1;
        }
    }
    for r in &file.redactions {
        let row = r.to_row()?;
        roles::put_redaction(&tx, &r.source, &row).await?;
        applied.redactions += 1;
    }
    for p in &file.policies {
        roles::put_policy(&tx, &p.source, &p.name, &p.rules).await?;
        applied.policies += 1;
    }
    tx.commit().await?;
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_section_and_refuses_unknown_keys() {
        let f = AccessFile::parse(
            r#"
            [[identities]]
            name = "a"
            kind = "agent"
            rate = "10/s"
            [[roles]]
            source = "shop"
            name = "analyst"
            allow = ["read public.customers"]
            [[policies]]
            source = "shop"
            name = "p"
            rules = [{ kind = "max_rows", value = 10 }, { kind = "approvals_required", resource = "public.orders", value = 2 }]
            "#,
        )
        .expect("valid file");
        assert_eq!(f.identities.len(), 1);
        assert_eq!(f.roles[0].allow, vec!["read public.customers"]);
        assert_eq!(
            f.policies[0].rules[0],
            PolicyRuleRow {
                kind: Some(super::super::roles::RuleKind::MaxRows),
                value: Some(10),
                ..Default::default()
            }
        );
        let bad = AccessFile::parse("[[roles]]\nsource='s'\nname='n'\ngrant=['x']\n");
        assert!(bad.is_err());
    }
}
