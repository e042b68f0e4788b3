//! `policy explain`: one call decided as the gateway would decide it now (or under a
//! candidate access file), shown whole: the caller's roles and their statements, the
//! source's policies and redactions, how every conditional and report-only rule came out,
//! and the verdict with the statements that decided it, the row cap, the approvals and the
//! mask of every output column. It runs the gateway's own steps ([`super::judge::Judge`]),
//! so an explanation and an enforcement cannot drift apart.

use serde::{Deserialize, Serialize};

use super::judge::{Judge, RecordedCall};
use crate::call::replay_basis::ReplayBasis;
use crate::control::access_snapshot::AccessSnapshot;
use crate::control::policy_file::AccessFile;
use crate::control::sources::SourceKind;
use crate::control::ControlError;
use crate::governance::condition::CallFacts;
use crate::governance::effect::CallEffect;
use crate::governance::policy::RuleOutcome;
use crate::governance::AccessProfile;
use crate::pipeline::Ports;

/// The call to explain.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainRequest {
    pub identity: String,
    pub source: String,
    pub sql: String,
    /// How many `$n` parameters the call would bind.
    #[serde(default)]
    pub params: usize,
    #[serde(default)]
    pub max_rows: Option<u64>,
    /// `api_key` (default) or `oauth`.
    #[serde(default)]
    pub credential: Option<String>,
    /// The token's groups and claims, for a caller with an access token.
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub claims: serde_json::Map<String, serde_json::Value>,
    /// When the call is made (default: now, on the policy clock).
    #[serde(default)]
    pub at: Option<chrono::DateTime<chrono::Utc>>,
    /// The tool and adapter the call comes through (default `interlock_query` over `mcp`).
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub adapter: Option<String>,
    /// A candidate access file (TOML) to explain the call under instead of the live policy.
    #[serde(default)]
    pub file: Option<String>,
}

/// The explanation.
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    pub identity: String,
    pub kind: String,
    pub source: String,
    /// Whether the live policy or a candidate file was explained.
    pub policy: &'static str,
    /// The facts the conditions were evaluated over.
    pub facts: CallFacts,
    /// The caller's roles, policies and redactions on the source (`null`: no role there).
    pub profile: Option<AccessProfile>,
    /// How every conditional and report-only rule came out.
    pub rules: Vec<RuleOutcome>,
    /// What the decision does to the call.
    pub effect: CallEffect,
    /// The whole verdict: for an allowed call the statement that would run, the
    /// statements that allowed it, its row cap, approvals and each output column's mask;
    /// for a refusal the step, code, rule and reason.
    pub verdict: serde_json::Value,
}

/// Why a call cannot be explained.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Control(#[from] ControlError),
}

pub async fn explain(
    ports: &impl Ports,
    req: &ExplainRequest,
) -> Result<Explanation, ExplainError> {
    let live = AccessSnapshot::load(ports.control()).await?;
    let (snapshot, policy) = match &req.file {
        Some(text) => (live.with_file(&AccessFile::parse(text)?)?, "candidate"),
        None => (live, "live"),
    };
    let kind = snapshot
        .identity_kind(&req.identity)
        .ok_or_else(|| ExplainError::NotFound(format!("no identity named {:?}", req.identity)))?;
    let rt = ports
        .source(&req.source)
        .ok_or_else(|| ExplainError::NotFound(format!("no source {:?}", req.source)))?;
    if rt.source.kind != SourceKind::Postgres {
        return Err(ExplainError::Invalid(format!(
            "source {:?} is a document collection: only SQL sources decide statements",
            req.source
        )));
    }
    let credential = req.credential.clone().unwrap_or_else(|| "api_key".into());
    if !["api_key", "oauth"].contains(&credential.as_str()) {
        return Err(ExplainError::Invalid(format!(
            "credential {credential:?} must be api_key or oauth"
        )));
    }
    let catalog = ports
        .catalog(&rt)
        .await
        .map_err(|e| ExplainError::Invalid(format!("the catalog of {:?}: {e}", req.source)))?;
    let facts = CallFacts {
        identity: req.identity.clone(),
        kind: kind.as_str().to_string(),
        credential,
        groups: req.groups.clone(),
        claims: req.claims.clone(),
        tool: req.tool.clone().unwrap_or_else(|| "interlock_query".into()),
        source: req.source.clone(),
        adapter: req.adapter.clone().unwrap_or_else(|| "mcp".into()),
        dialect: String::new(),
        time: req.at.unwrap_or_else(|| ports.policy_now()),
        zone: ports.policy_zone().to_string(),
        max_rows: req.max_rows,
        source_max_rows: u64::from(rt.source.max_rows),
    };
    let profile = snapshot.profile(&req.identity, &req.source)?;
    let limits = ports.sql_limits();
    let call = RecordedCall {
        seq: 0,
        at: facts.time,
        identity: req.identity.clone(),
        source: req.source.clone(),
        statement: req.sql.clone(),
        basis: ReplayBasis {
            facts: facts.clone(),
            params: req.params,
            effect: None,
            plan: None,
        },
    };
    let judge = Judge {
        source: &rt.source,
        catalog: &catalog.catalog,
        memo: None,
        limits: &limits,
    };
    let judged = judge.decide(profile.as_ref(), &call);
    let verdict = match &judged.verdict {
        Some(v) => serde_json::to_value(v),
        None => serde_json::to_value(&judged.effect),
    }
    .unwrap_or_default();
    Ok(Explanation {
        identity: req.identity.clone(),
        kind: kind.as_str().to_string(),
        source: req.source.clone(),
        policy,
        facts,
        profile,
        rules: judged.rules,
        effect: judged.effect,
        verdict,
    })
}
