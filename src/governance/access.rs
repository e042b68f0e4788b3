//! Access statements, roles, policies and the evaluator that decides one
//! (action, resource) question.
//!
//! Precedence, in order:
//! 1. A matching `deny` — from a policy rule or a role statement — refuses.
//! 2. Otherwise a matching role `allow` grants.
//! 3. Otherwise the answer is deny ("no allow").
//!
//! Policies can only deny or cap; they never grant. A table-level question
//! ("may I read app.users at all", "may I delete rows of app.users") is
//! granted by a table, schema or `*` pattern — and, for reads, also by an
//! allowed column of the table — and is refused only by a deny on the table
//! itself (a column deny leaves the table usable). A column question applies
//! column patterns as well, so `deny read app.users.ssn` refuses that column
//! only.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::governance::cost::{CostMeasure, OnExceed};
pub use crate::governance::pattern::{PatternError, ResourcePattern};
pub use crate::governance::policy::{Rule, RuleMode};
use crate::governance::redaction::{MaskStrategy, RedactionRule};

/// What the caller wants to do with a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Read,
    Write,
    Describe,
    Discover,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Read => "read",
            Action::Write => "write",
            Action::Describe => "describe",
            Action::Discover => "discover",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Action {
    type Err = StatementError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "read" => Ok(Action::Read),
            "write" => Ok(Action::Write),
            "describe" => Ok(Action::Describe),
            "discover" => Ok(Action::Discover),
            _ => Err(StatementError::UnknownAction),
        }
    }
}

/// Whether a statement grants or refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    Allow,
    Deny,
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Effect::Allow => "allow",
            Effect::Deny => "deny",
        })
    }
}

/// Why an access statement string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StatementError {
    #[error("an access statement reads '<allow|deny> <read|write|describe|discover> <resource>'")]
    Shape,
    #[error("the effect must be 'allow' or 'deny'")]
    UnknownEffect,
    #[error("the action must be read, write, describe or discover")]
    UnknownAction,
    #[error(transparent)]
    Pattern(#[from] PatternError),
}

/// One line of a role: `allow read app.users`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AccessStatement {
    pub effect: Effect,
    pub action: Action,
    pub resource: ResourcePattern,
}

impl fmt::Display for AccessStatement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.effect, self.action, self.resource)
    }
}

impl FromStr for AccessStatement {
    type Err = StatementError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut words = s.trim().splitn(3, char::is_whitespace);
        let (Some(effect), Some(action), Some(resource)) =
            (words.next(), words.next(), words.next())
        else {
            return Err(StatementError::Shape);
        };
        let effect = match effect.to_ascii_lowercase().as_str() {
            "allow" => Effect::Allow,
            "deny" => Effect::Deny,
            _ => return Err(StatementError::UnknownEffect),
        };
        Ok(AccessStatement {
            effect,
            action: action.parse()?,
            resource: resource.parse()?,
        })
    }
}

/// A named set of access statements held by the caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRole {
    pub name: String,
    pub statements: Vec<AccessStatement>,
}

/// What a rule of a policy does. Policies restrict; they never grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyRule {
    /// Refuses an action on a resource.
    Deny {
        action: Action,
        resource: ResourcePattern,
    },
    /// Caps the rows a read returns.
    MaxRows(u64),
    /// Writes touching the resource need this many approvals.
    ApprovalsRequired {
        resource: ResourcePattern,
        approvals: u32,
    },
    /// Refuses the call (a rule with a condition and no resource).
    DenyCall,
    /// The call waits for this many human approvals (reads too).
    RequireApproval(u32),
    /// Masks the columns the resource covers, on top of the source's redactions; the
    /// stricter mask wins where both apply.
    Mask {
        resource: ResourcePattern,
        strategy: MaskStrategy,
        allow_filter: bool,
    },
    /// Bounds one measure of the planner's estimate of a read, checked on the source before
    /// it runs (cost admission); what an over-limit read gets is `on_exceed`.
    CostLimit {
        measure: CostMeasure,
        limit: u64,
        on_exceed: OnExceed,
    },
    /// A write the planner estimates above `cost` needs `approvals` approvals.
    ApprovalsAboveCost { cost: u64, approvals: u32 },
}

impl fmt::Display for PolicyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyRule::Deny { action, resource } => write!(f, "deny {action} {resource}"),
            PolicyRule::MaxRows(n) => write!(f, "max rows {n}"),
            PolicyRule::ApprovalsRequired {
                resource,
                approvals,
            } => {
                write!(f, "{approvals} approvals for {resource}")
            }
            PolicyRule::DenyCall => f.write_str("deny the call"),
            PolicyRule::RequireApproval(n) => write!(f, "require {n} approval(s)"),
            PolicyRule::Mask { resource, .. } => write!(f, "mask {resource}"),
            PolicyRule::CostLimit { measure, limit, .. } => {
                write!(f, "{} {limit}", measure.rule_kind())
            }
            PolicyRule::ApprovalsAboveCost { cost, approvals } => {
                write!(f, "{approvals} approvals above cost {cost}")
            }
        }
    }
}

/// A named set of restrictions applied on top of the roles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    pub name: String,
    pub rules: Vec<Rule>,
}

/// Everything that governs one caller on one source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessProfile {
    pub roles: Vec<SourceRole>,
    pub policies: Vec<Policy>,
    pub redactions: Vec<RedactionRule>,
}

/// One access question: an action on a relation, or on one of its columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessRequest<'a> {
    pub action: Action,
    pub schema: &'a str,
    pub table: &'a str,
    /// `None` asks about the relation as a whole.
    pub column: Option<&'a str>,
}

/// Where the deciding statement lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "name")]
pub enum RuleOrigin {
    Role(String),
    Policy(String),
    /// No statement matched: the roles held are listed.
    NoMatch(Vec<String>),
}

/// The answer to one access question, naming the statement that decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AccessDecision {
    pub effect: Effect,
    pub origin: RuleOrigin,
    /// The deciding statement's text, e.g. `deny read app.users.ssn`.
    pub statement: String,
}

impl fmt::Display for AccessDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            RuleOrigin::Role(name) => write!(f, "role {name}: {}", self.statement),
            RuleOrigin::Policy(name) => write!(f, "policy {name}: {}", self.statement),
            RuleOrigin::NoMatch(roles) if roles.is_empty() => {
                write!(f, "no roles: {}", self.statement)
            }
            RuleOrigin::NoMatch(roles) if roles.len() == 1 => {
                write!(f, "role {}: {}", roles.join(", "), self.statement)
            }
            RuleOrigin::NoMatch(roles) => {
                write!(f, "roles {}: {}", roles.join(", "), self.statement)
            }
        }
    }
}

/// Answers one access question. See the module docs for the precedence.
pub fn evaluate(profile: &AccessProfile, request: &AccessRequest<'_>) -> AccessDecision {
    let AccessRequest {
        action,
        schema,
        table,
        column,
    } = *request;
    let deny_matches = |resource: &ResourcePattern| match column {
        Some(c) => resource.covers_column(schema, table, c),
        None => resource.covers_table(schema, table),
    };
    for policy in &profile.policies {
        for rule in policy.rules.iter().filter(|r| r.always_applies()) {
            if let PolicyRule::Deny {
                action: a,
                resource,
            } = &rule.effect
            {
                if *a == action && deny_matches(resource) {
                    return decided(
                        Effect::Deny,
                        RuleOrigin::Policy(policy.name.clone()),
                        rule.to_string(),
                    );
                }
            }
        }
    }
    let statements = || {
        profile
            .roles
            .iter()
            .flat_map(|role| role.statements.iter().map(move |s| (role, s)))
            .filter(|(_, s)| s.action == action)
    };
    if let Some((role, s)) =
        statements().find(|(_, s)| s.effect == Effect::Deny && deny_matches(&s.resource))
    {
        return decided(
            Effect::Deny,
            RuleOrigin::Role(role.name.clone()),
            s.to_string(),
        );
    }
    let allow_matches = |resource: &ResourcePattern| match column {
        Some(c) => resource.covers_column(schema, table, c),
        None if action == Action::Read => resource.touches_table(schema, table),
        None => resource.covers_table(schema, table),
    };
    if let Some((role, s)) =
        statements().find(|(_, s)| s.effect == Effect::Allow && allow_matches(&s.resource))
    {
        return decided(
            Effect::Allow,
            RuleOrigin::Role(role.name.clone()),
            s.to_string(),
        );
    }
    let target = match column {
        Some(c) => ResourcePattern::Column(schema.into(), table.into(), c.into()),
        None => ResourcePattern::Table(schema.into(), table.into()),
    };
    decided(
        Effect::Deny,
        RuleOrigin::NoMatch(profile.roles.iter().map(|r| r.name.clone()).collect()),
        format!("no allow for {action} {target}"),
    )
}

fn decided(effect: Effect, origin: RuleOrigin, statement: String) -> AccessDecision {
    AccessDecision {
        effect,
        origin,
        statement,
    }
}

/// True when `request` is allowed.
pub fn is_allowed(profile: &AccessProfile, request: &AccessRequest<'_>) -> bool {
    evaluate(profile, request).effect == Effect::Allow
}
