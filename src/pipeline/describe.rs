//! `interlock_describe_access` and `interlock_describe_source`, answered by the same
//! evaluator that decides enforcement, so a description cannot drift from a decision.

use serde_json::{json, Map, Value};

use super::ports::Ports;
use super::query::{rate_limit, source_and_profile};
use super::refusal::Refusal;
use super::Work;
use crate::call::AuditDraft;
use crate::call::Outcome;
use crate::control::identities::Identity;
use crate::control::sources::SourceKind;
use crate::governance::{
    evaluate, is_allowed, readable_columns, AccessProfile, AccessRequest, Action, Effect,
    RuleOrigin,
};
use crate::mcp::{DescribeAccessArgs, DescribeSourceArgs};
use crate::stages::GovernanceStep;

/// Most tables listed per source.
pub const MAX_TABLES: usize = 200;

pub async fn describe_access(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    identity: &Identity,
    args: &DescribeAccessArgs,
) -> Result<Work, Outcome> {
    rate_limit(ports, draft, identity, None, false).await?;
    draft.enter(GovernanceStep::Execution);
    let only = args.source_id.as_deref();
    let mut out = Map::new();
    for rt in ports.sources() {
        if only.is_some_and(|o| o != rt.source.id) {
            continue;
        }
        let profile = match ports.profile(identity.id, &rt.source.id).await {
            Ok(Some(p)) => p,
            Ok(None) => continue,
            Err(e) => {
                draft.error = Some(format!("profile lookup: {e}"));
                return Err(Outcome::control_unavailable());
            }
        };
        let p = &profile.profile;
        let statements = |effect: crate::governance::Effect| -> Vec<Value> {
            p.roles
                .iter()
                .flat_map(|r| r.statements.iter())
                .filter(|s| s.effect == effect)
                .map(|s| json!({"action": s.action.as_str(), "resource": s.resource.to_string()}))
                .collect()
        };
        let resources = match rt.source.kind {
            SourceKind::Documents => json!({"enforced": false}),
            SourceKind::Postgres => match rt.catalog() {
                None => json!({"enforced": true, "catalogued": false}),
                Some(c) => sql_resources(p, &c.catalog, &c.stored),
            },
        };
        out.insert(
            rt.source.id.clone(),
            json!({
                "type": rt.source.kind.as_str(),
                "roles": p.roles.iter().map(|r| r.name.clone()).collect::<Vec<_>>(),
                "allow": statements(Effect::Allow),
                "deny": statements(Effect::Deny),
                "resources": resources,
            }),
        );
    }
    draft.allowed("describe", &[]);
    draft.row_count = i64::try_from(out.len()).ok();
    Ok(Work::Done(Outcome::Json(Value::Object(out))))
}

/// Tables and columns the roles allow and do not deny; a policy that would still refuse a
/// table is named on it.
fn sql_resources(
    profile: &AccessProfile,
    catalog: &crate::sql::Catalog,
    stored: &crate::control::catalog::StoredCatalog,
) -> Value {
    let roles_only = AccessProfile {
        roles: profile.roles.clone(),
        policies: Vec::new(),
        redactions: profile.redactions.clone(),
    };
    let readable = readable_columns(&roles_only, catalog);
    let truncated = readable.len() > MAX_TABLES;
    let tables: Vec<Value> = readable
        .iter()
        .take(MAX_TABLES)
        .map(|r| {
            let mut t = json!({
                "table": r.relation.to_string(),
                "columns": r.columns.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
                "all_columns": r.all_columns,
            });
            let decision = evaluate(
                profile,
                &AccessRequest {
                    action: Action::Read,
                    schema: &r.relation.schema,
                    table: &r.relation.name,
                    column: None,
                },
            );
            if decision.effect == Effect::Deny {
                if let RuleOrigin::Policy(name) = &decision.origin {
                    t["policy"] = json!({
                        "refused": true,
                        "rule": decision.to_string(),
                        "reason": format!("policy {name} refuses reading {}", r.relation),
                    });
                }
            }
            t
        })
        .collect();
    json!({
        "enforced": true,
        "catalogued": true,
        "scanned_at": stored.scanned_at,
        "catalog_truncated": stored.truncated,
        "tables": tables,
        "truncated": truncated,
    })
}

pub async fn describe_source(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    identity: &Identity,
    args: &DescribeSourceArgs,
) -> Result<Work, Outcome> {
    let source_id = args.source_id.as_str();
    let (rt, profile) = source_and_profile(ports, draft, identity, source_id).await?;
    let answer = match rt.source.kind {
        SourceKind::Documents => json!({
            "source_id": source_id,
            "type": "documents",
            "introspection": "document collection: search it with interlock_discover",
        }),
        SourceKind::Postgres => {
            let rows = describable_columns(ports, draft, &rt, &profile.profile, source_id).await?;
            draft.row_count = i64::try_from(rows.len()).ok();
            Value::Array(rows)
        }
    };
    rate_limit(ports, draft, identity, Some(source_id), false).await?;
    draft.enter(GovernanceStep::Execution);
    draft.allowed("describe", &[]);
    Ok(Work::Done(Outcome::Json(answer)))
}

/// The policy step of `interlock_describe_source` on a SQL source: the columns of every
/// table the caller's roles allow describing, refused when there is none.
async fn describable_columns(
    ports: &impl Ports,
    draft: &mut AuditDraft,
    rt: &crate::sources::registry::SourceRuntime,
    profile: &AccessProfile,
    source_id: &str,
) -> Result<Vec<Value>, Outcome> {
    draft.enter(GovernanceStep::Policy);
    let catalog = ports.catalog(rt).await.map_err(|e| {
        draft.error = Some(format!("catalog: {e}"));
        Outcome::Unavailable {
            reason: e.unavailable_reason().into(),
        }
    })?;
    let mut rows = Vec::new();
    for r in catalog.catalog.relations() {
        let request = AccessRequest {
            action: Action::Describe,
            schema: &r.schema,
            table: &r.name,
            column: None,
        };
        if !is_allowed(profile, &request) {
            continue;
        }
        for c in &r.columns {
            rows.push(json!({
                "table_schema": r.schema,
                "table_name": r.name,
                "column_name": c.name,
                "data_type": c.data_type,
            }));
        }
    }
    if rows.is_empty() {
        return Err(Refusal::denied(
            "authorize",
            403,
            "access_denied",
            "no describe grant",
            "nothing describable",
            format!("Your roles allow describing no table of source {source_id:?}; ask an operator for a describe grant."),
        )
        .apply(draft));
    }
    Ok(rows)
}
