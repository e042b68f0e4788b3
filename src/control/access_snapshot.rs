//! The access state of the gateway as one value, read in one snapshot: every identity, every
//! role's statements, every grant, policy and redaction ([`AccessSnapshot::load`]). An access
//! file can be laid over it exactly as `policy apply` would change the database
//! ([`AccessSnapshot::with_file`]: roles and policies named in the file replaced whole,
//! grants and redactions added or updated, the same checks and the same refusals), without
//! writing anything, and the profile of any identity on any source read from the result
//! ([`AccessSnapshot::profile`]) is the profile `load_profile` would load once the file is
//! applied. `interlock policy simulate` decides recorded calls against it.

use std::collections::{BTreeMap, BTreeSet};

use super::identities::IdentityKind;
use super::policy_file::AccessFile;
use super::roles::{check_policy, PolicyRuleRow, RedactionRow, RoleStatement};
use super::{ControlError, ControlPool};
use crate::governance::{AccessProfile, Policy, RedactionRule, Rule, SourceRole};

/// The access state of one source.
#[derive(Debug, Clone, Default)]
struct SourceAccess {
    /// Role name → its statements, in the order they were stored.
    roles: BTreeMap<String, Vec<RoleStatement>>,
    /// Identity name → the roles it holds on the source.
    grants: BTreeMap<String, BTreeSet<String>>,
    /// Policy name → its rules, in order.
    policies: BTreeMap<String, Vec<Rule>>,
    /// (schema, table, column) → its rule.
    redactions: BTreeMap<(String, String, String), RedactionRule>,
}

/// Every source's access state and every identity (name → kind).
#[derive(Debug, Clone, Default)]
pub struct AccessSnapshot {
    identities: BTreeMap<String, String>,
    sources: BTreeMap<String, SourceAccess>,
    known_sources: BTreeSet<String>,
}

impl AccessSnapshot {
    /// Reads the whole access state in one repeatable-read transaction.
    pub async fn load(pool: &ControlPool) -> Result<Self, ControlError> {
        let mut client = pool.get().await?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await?;
        let mut snap = AccessSnapshot::default();
        for r in tx.query("SELECT name, kind FROM identities", &[]).await? {
            snap.identities.insert(r.get(0), r.get(1));
        }
        for r in tx.query("SELECT id FROM sources", &[]).await? {
            snap.known_sources.insert(r.get(0));
        }
        for r in tx
            .query("SELECT source_id, name FROM source_roles", &[])
            .await?
        {
            snap.source(r.get(0)).roles.entry(r.get(1)).or_default();
        }
        let statements = tx
            .query(
                "SELECT source_id, role_name, effect, action, resource FROM role_statements ORDER BY id",
                &[],
            )
            .await?;
        for r in statements {
            let statement = RoleStatement {
                effect: r.get(2),
                action: r.get(3),
                resource: r.get(4),
            };
            snap.source(r.get(0))
                .roles
                .entry(r.get(1))
                .or_default()
                .push(statement);
        }
        let grants = tx
            .query(
                "SELECT g.source_id, i.name, g.role_name FROM role_grants g JOIN identities i ON i.id = g.identity_id",
                &[],
            )
            .await?;
        for r in grants {
            snap.source(r.get(0))
                .grants
                .entry(r.get(1))
                .or_default()
                .insert(r.get(2));
        }
        let rules = tx
            .query(
                "SELECT source_id, policy_name, rule_name, kind, action, resource, value, condition, mode,
                        message, strategy, keep_last, allow_filter, on_exceed, approvals
                   FROM policy_rules ORDER BY source_id, policy_name, id",
                &[],
            )
            .await?;
        for r in rules {
            let (source, name): (String, String) = (r.get("source_id"), r.get("policy_name"));
            let bad = |what: String| ControlError::Invalid(format!("policy {name}: {what}"));
            let policy = snap
                .source(source)
                .policies
                .entry(name.clone())
                .or_default();
            let rule = PolicyRuleRow::from_stored(&r)
                .and_then(|row| row.to_rule(policy.len()))
                .map_err(bad)?;
            policy.push(rule);
        }
        let redactions = tx
            .query(
                "SELECT source_id, schema_name, table_name, column_name, strategy, keep_last, allow_filter
                   FROM redaction_rules",
                &[],
            )
            .await?;
        for r in redactions {
            let row = RedactionRow {
                schema: r.get(1),
                table: r.get(2),
                column: r.get(3),
                strategy: r.get(4),
                keep_last: r.get(5),
                allow_filter: r.get(6),
            };
            snap.put_redaction(r.get(0), &row)?;
        }
        tx.commit().await?;
        Ok(snap)
    }

    fn source(&mut self, id: String) -> &mut SourceAccess {
        self.sources.entry(id).or_default()
    }

    fn put_redaction(&mut self, source: String, row: &RedactionRow) -> Result<(), ControlError> {
        let rule = row.to_rule()?;
        self.source(source).redactions.insert(
            (row.schema.clone(), row.table.clone(), row.column.clone()),
            rule,
        );
        Ok(())
    }

    /// This state with `file` applied as `policy apply` applies it; refused whole, with
    /// the error `policy apply` would give, when `apply` would refuse it.
    pub fn with_file(&self, file: &AccessFile) -> Result<AccessSnapshot, ControlError> {
        let mut next = self.clone();
        for i in &file.identities {
            i.rate_limit()?;
            match next.identities.get(&i.name) {
                Some(kind) if kind != i.kind.as_str() => {
                    return Err(ControlError::Conflict(format!(
                        "identity {:?} exists as {kind}, not {}",
                        i.name, i.kind
                    )))
                }
                Some(_) => {}
                None => {
                    next.identities
                        .insert(i.name.clone(), i.kind.as_str().to_string());
                }
            }
        }
        for r in &file.roles {
            let statements = r.statements()?;
            next.require_source(&r.source)?;
            let mut kept: Vec<RoleStatement> = Vec::with_capacity(statements.len());
            for s in statements {
                // A statement stored twice is stored once (`ON CONFLICT DO NOTHING`).
                if !kept.contains(&s) {
                    kept.push(s);
                }
            }
            next.source(r.source.clone())
                .roles
                .insert(r.name.clone(), kept);
        }
        for g in &file.grants {
            for role in &g.roles {
                if !next.identities.contains_key(&g.identity) {
                    return Err(ControlError::NotFound(format!(
                        "no identity named {:?}",
                        g.identity
                    )));
                }
                let access = next.source(g.source.clone());
                if !access.roles.contains_key(role) {
                    return Err(ControlError::NotFound(format!(
                        "no role {role:?} on source {:?}",
                        g.source
                    )));
                }
                access
                    .grants
                    .entry(g.identity.clone())
                    .or_default()
                    .insert(role.clone());
            }
        }
        for a in &file.approvers {
            for source in &a.sources {
                let approver = next.identities.get(&a.identity).map(String::as_str);
                if approver != Some("approver") || !next.known_sources.contains(source) {
                    return Err(ControlError::NotFound(format!(
                        "cannot scope {:?} to {source:?}: the identity must exist as an approver and the source must exist",
                        a.identity
                    )));
                }
            }
        }
        for r in &file.redactions {
            let row = r.to_row()?;
            next.require_source(&r.source)?;
            next.put_redaction(r.source.clone(), &row)?;
        }
        for p in &file.policies {
            let rules = check_policy(&p.name, &p.rules)?;
            next.require_source(&p.source)?;
            next.source(p.source.clone())
                .policies
                .insert(p.name.clone(), rules);
        }
        Ok(next)
    }

    fn require_source(&self, source: &str) -> Result<(), ControlError> {
        if self.known_sources.contains(source) {
            Ok(())
        } else {
            Err(ControlError::NotFound(format!("no source {source:?}")))
        }
    }

    /// The kind of a named identity.
    pub fn identity_kind(&self, name: &str) -> Option<IdentityKind> {
        self.identities.get(name).and_then(|k| k.parse().ok())
    }

    /// The profile of `identity` on `source`, or `None` when it holds no role there.
    pub fn profile(
        &self,
        identity: &str,
        source: &str,
    ) -> Result<Option<AccessProfile>, ControlError> {
        let Some(access) = self.sources.get(source) else {
            return Ok(None);
        };
        let Some(granted) = access.grants.get(identity).filter(|g| !g.is_empty()) else {
            return Ok(None);
        };
        let mut roles = Vec::with_capacity(granted.len());
        for name in granted {
            let statements = access
                .roles
                .get(name)
                .map(|s| {
                    s.iter()
                        .map(RoleStatement::to_access)
                        .collect::<Result<Vec<_>, _>>()
                })
                .transpose()?
                .unwrap_or_default();
            roles.push(SourceRole {
                name: name.clone(),
                statements,
            });
        }
        Ok(Some(AccessProfile {
            roles,
            policies: access
                .policies
                .iter()
                .map(|(name, rules)| Policy {
                    name: name.clone(),
                    rules: rules.clone(),
                })
                .collect(),
            redactions: access.redactions.values().cloned().collect(),
        }))
    }
}
