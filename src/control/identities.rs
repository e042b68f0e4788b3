//! Identities: who calls the gateway, and as what.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::keys::hash_key;
use super::{conflict_on_unique, ControlError, ControlPool};

/// What an identity is for. Agents call governed tools; approvers resolve queued writes on
/// the sources they are scoped to; operators administer the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IdentityKind {
    Agent,
    Approver,
    Operator,
}

impl IdentityKind {
    pub fn as_str(self) -> &'static str {
        match self {
            IdentityKind::Agent => "agent",
            IdentityKind::Approver => "approver",
            IdentityKind::Operator => "operator",
        }
    }
}

impl fmt::Display for IdentityKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for IdentityKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "agent" => Ok(IdentityKind::Agent),
            "approver" => Ok(IdentityKind::Approver),
            "operator" => Ok(IdentityKind::Operator),
            other => Err(format!(
                "unknown identity kind {other:?} (agent, approver or operator)"
            )),
        }
    }
}

/// A rate limit: sustained requests per second and a burst.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: u32,
}

impl FromStr for RateLimit {
    type Err = String;
    /// Parses `50/s`, `3000/m` or `100000/h`; the burst defaults to one second's worth.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (n, unit) = s
            .split_once('/')
            .ok_or_else(|| format!("rate {s:?} must look like 50/s, 3000/m or 100000/h"))?;
        let n: f64 = n
            .trim()
            .parse()
            .map_err(|_| format!("rate {s:?}: {n:?} is not a number"))?;
        let per_second = match unit.trim() {
            "s" => n,
            "m" => n / 60.0,
            "h" => n / 3600.0,
            other => return Err(format!("rate {s:?}: unit {other:?} must be s, m or h")),
        };
        if !(per_second.is_finite() && per_second > 0.0) {
            return Err(format!("rate {s:?} must be greater than zero"));
        }
        Ok(RateLimit {
            per_second,
            burst: per_second.ceil().max(1.0) as u32,
        })
    }
}

/// A cost budget: planner cost units per second, with a burst (cost admission). A read
/// takes its estimated cost from the budget of its identity on its source.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostBudget {
    pub per_second: f64,
    pub burst: f64,
}

impl FromStr for CostBudget {
    type Err = String;
    /// Parses `50000/s`, `3000000/m` or `1e8/h`; the burst defaults to one second's worth.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let rate: RateLimit = s
            .parse()
            .map_err(|e: String| e.replacen("rate", "cost budget", 1))?;
        Ok(CostBudget {
            per_second: rate.per_second,
            burst: rate.per_second.ceil().max(1.0),
        })
    }
}

/// Longest identity name, in characters.
pub const MAX_NAME_CHARS: usize = 63;

/// Whether `name` is a usable identity name: what the `identities.name` CHECK of the
/// control schema admits (`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`), checked here first so a bad
/// name is refused with a reason, before any database work (PostgreSQL text cannot even
/// carry a NUL). The reason never repeats the name (it may hold control characters).
pub fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let chars = name.chars().count();
    if name.is_empty() {
        Err("it is empty".into())
    } else if chars > MAX_NAME_CHARS {
        Err(format!(
            "it is {chars} characters long; at most {MAX_NAME_CHARS}"
        ))
    } else if name.chars().any(char::is_control) {
        Err("it contains a control character (NUL, newline, …)".into())
    } else if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        Err("it starts or ends with white space".into())
    } else if !name.chars().all(allowed) {
        Err("it may hold only ASCII letters, digits, '.', '_' and '-'".into())
    } else if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        Err("it must start with a letter or a digit".into())
    } else {
        Ok(())
    }
}

/// An identity as stored.
#[derive(Debug, Clone, Serialize)]
pub struct Identity {
    pub id: Uuid,
    pub name: String,
    pub kind: IdentityKind,
    pub rate: Option<RateLimit>,
    /// The identity's cost budget on each source, when it has one.
    pub cost: Option<CostBudget>,
    pub created_at: DateTime<Utc>,
}

pub(crate) fn from_row(r: &tokio_postgres::Row) -> Result<Identity, ControlError> {
    let kind: String = r.get("kind");
    let per_second: Option<f64> = r.get("rate_per_second");
    let burst: Option<i32> = r.get("burst");
    Ok(Identity {
        id: r.get("id"),
        name: r.get("name"),
        kind: kind.parse().map_err(ControlError::Invalid)?,
        rate: per_second.map(|per_second| RateLimit {
            per_second,
            burst: burst.and_then(|b| u32::try_from(b).ok()).unwrap_or(1),
        }),
        cost: r
            .get::<_, Option<f64>>("cost_per_second")
            .map(|per_second| CostBudget {
                per_second,
                burst: r
                    .get::<_, Option<f64>>("cost_burst")
                    .unwrap_or(per_second.ceil().max(1.0)),
            }),
        created_at: r.get("created_at"),
    })
}

/// Creates an identity, or returns the existing one when `name` already exists with the
/// same kind (a different kind is a conflict). The rate limit is updated when given.
pub async fn ensure_identity(
    pool: &ControlPool,
    name: &str,
    kind: IdentityKind,
    rate: Option<RateLimit>,
) -> Result<Identity, ControlError> {
    check_name(name)
        .map_err(|why| ControlError::Invalid(format!("not a usable identity name: {why}")))?;
    let client = pool.get().await?;
    let per_second = rate.map(|r| r.per_second);
    let burst = rate.map(|r| i32::try_from(r.burst).unwrap_or(i32::MAX));
    let row = client
        .query_one(
            "INSERT INTO identities (id, name, kind, rate_per_second, burst)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (name) DO UPDATE
                SET rate_per_second = coalesce(EXCLUDED.rate_per_second, identities.rate_per_second),
                    burst = coalesce(EXCLUDED.burst, identities.burst)
             RETURNING id, name, kind, rate_per_second, burst, cost_per_second, cost_burst, created_at",
            &[&Uuid::new_v4(), &name, &kind.as_str(), &per_second, &burst],
        )
        .await
        .map_err(|e| conflict_on_unique(e, || format!("identity {name:?} exists")))?;
    let identity = from_row(&row)?;
    if identity.kind != kind {
        return Err(ControlError::Conflict(format!(
            "identity {name:?} exists as {}, not {kind}",
            identity.kind
        )));
    }
    Ok(identity)
}

pub async fn list_identities(pool: &ControlPool) -> Result<Vec<Identity>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(
            "SELECT id, name, kind, rate_per_second, burst, cost_per_second, cost_burst, created_at FROM identities ORDER BY name",
            &[],
        )
        .await?;
    rows.iter().map(from_row).collect()
}

/// The identity holding an unrevoked key, if any. This is the lookup behind every
/// `Authorization: Bearer` header (cached by the identity resolver).
pub async fn identity_for_key(
    pool: &ControlPool,
    key: &str,
) -> Result<Option<Identity>, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            "SELECT i.id, i.name, i.kind, i.rate_per_second, i.burst, i.cost_per_second, i.cost_burst, i.created_at
               FROM api_keys k JOIN identities i ON i.id = k.identity_id
              WHERE k.key_hash = $1 AND k.revoked_at IS NULL",
            &[&hash_key(key)],
        )
        .await?;
    row.as_ref().map(from_row).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_names_follow_the_schema_rule() {
        let long = "a".repeat(MAX_NAME_CHARS);
        for good in ["demo-agent", "A", "9.x_y-z", long.as_str()] {
            assert_eq!(check_name(good), Ok(()), "{good:?}");
        }
        let cases = [
            ("", "empty"),
            ("a\0b", "control character"),
            ("a\nb", "control character"),
            ("a\u{7f}", "control character"),
            (" demo-agent", "white space"),
            ("demo-agent ", "white space"),
            ("demo agent", "only ASCII"),
            ("d\u{e9}mo", "only ASCII"),
            ("-agent", "start with a letter"),
            (".agent", "start with a letter"),
        ];
        for (bad, says) in cases {
            let why = check_name(bad).expect_err(bad);
            assert!(why.contains(says), "{bad:?}: {why}");
        }
        let why = check_name(&"a".repeat(10_240)).expect_err("10 KB");
        assert!(why.contains("10240 characters"), "{why}");
        assert!(check_name(&"a".repeat(MAX_NAME_CHARS + 1)).is_err());
    }

    #[test]
    fn rates_parse_or_explain() {
        let ok: &[(&str, f64, u32)] = &[("50/s", 50.0, 50), ("120/m", 2.0, 2), ("36/h", 0.01, 1)];
        for (s, per_second, burst) in ok {
            let r: RateLimit = s.parse().expect(s);
            assert!((r.per_second - per_second).abs() < 1e-9, "{s}");
            assert_eq!(r.burst, *burst, "{s}");
        }
        for bad in ["50", "x/s", "0/s", "5/d", "-1/s"] {
            assert!(bad.parse::<RateLimit>().is_err(), "{bad} must be refused");
        }
    }
}
