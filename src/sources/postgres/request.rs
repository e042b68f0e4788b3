//! What one governed statement on a PostgreSQL source is asked for: its mode, for whom it
//! runs, its limits and its parameters.

use serde_json::Value;
use tokio_postgres::types::{Format, IsNull, ToSql, Type};

use super::pool::Purpose;
pub use crate::sql::cap::CapForm;

/// What is executed, which decides the pool and the statements sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A read that returns rows, under a row cap (at most cap + 1 rows are produced), put
    /// on the statement in the given form.
    Query(CapForm),
    /// An `EXPLAIN` (it cannot be a derived table; its output is a plan). With `analyze`
    /// the statement runs, and its plan counts rows: it runs with `row_security = off`, so
    /// PostgreSQL refuses it ([`ExecError::RowSecurity`]) wherever a row-level security
    /// policy would hide rows, instead of reporting how many it removed.
    Plan { analyze: bool },
    /// An approved write, committed; rolled back instead when it changes more rows than
    /// `bound` (the approved effect), or, with `keys` (the digest of the keys the preview
    /// showed; the statement's last column is each row's key), other rows than those.
    Write {
        bound: Option<u64>,
        keys: Option<[u8; 32]>,
    },
    /// A write's preview: executed in a transaction that is always rolled back, under
    /// short statement and lock timeouts.
    DryRun(PreviewTimeouts),
    /// A write's preview: its plan (`EXPLAIN (FORMAT JSON)`); nothing runs.
    Estimate,
    /// A read's admission: the plan (`EXPLAIN (FORMAT JSON, VERBOSE)`, never `ANALYZE`) of
    /// exactly the statement [`Mode::Query`] would send, row cap included, planned as its
    /// caller on the read pool; nothing runs.
    CostPlan(CapForm),
    /// A query of the source's own catalog (`pg_class`, `pg_index`, statistics) on the read
    /// pool, whoever the session runs for: what a cost refusal says of the relations the
    /// caller may read.
    Catalog,
}

/// Who a governed transaction runs for, carried into the source when its
/// `identity_propagation` is `settings` or `role`: `interlock.identity` and `interlock.roles`
/// (comma-separated) set before the statement, and with `role` also the mapped PostgreSQL
/// role: for a read on its connection's session (`session.rs`), for a write and its
/// estimate transaction-local.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub identity: String,
    pub roles: String,
    pub pg_role: Option<String>,
}

/// A source runs callers as mapped PostgreSQL roles and this identity has none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmapped {
    pub source: String,
    pub identity: String,
}

impl std::fmt::Display for Unmapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "source {} runs every caller as a mapped PostgreSQL role and identity {} has none; \
             an operator must map it (interlock sources identity {} --map {}=<role>)",
            self.source, self.identity, self.source, self.identity
        )
    }
}

impl Caller {
    /// The caller to carry into `source` (`None` when it carries none; `Unmapped` when it
    /// runs callers as roles and `identity` has no mapping: fail closed).
    pub fn for_source<'a>(
        source: &crate::control::sources::Source,
        identity: &str,
        roles: impl IntoIterator<Item = &'a str>,
    ) -> Result<Option<Caller>, Unmapped> {
        use crate::control::sources::Propagation;
        let pg_role = match source.identity_propagation {
            Propagation::None => return Ok(None),
            Propagation::Settings => None,
            Propagation::Role => match source.identity_roles.get(identity) {
                Some(role) => Some(role.clone()),
                None => {
                    return Err(Unmapped {
                        source: source.id.clone(),
                        identity: identity.to_string(),
                    })
                }
            },
        };
        Ok(Some(Caller {
            identity: identity.to_string(),
            roles: roles.into_iter().collect::<Vec<_>>().join(","),
            pg_role,
        }))
    }
}

/// The timeouts of a dry run, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreviewTimeouts {
    pub statement_ms: u32,
    pub lock_ms: u32,
}

impl Mode {
    /// The mode of an allowed read: a plan for `EXPLAIN`, a query capped in the form
    /// `cap` otherwise.
    pub fn read(explain: Option<crate::sql::classify::ExplainMode>, cap: CapForm) -> Mode {
        match explain {
            Some(e) => Mode::Plan { analyze: e.analyze },
            None => Mode::Query(cap),
        }
    }

    pub(super) fn purpose(self) -> Purpose {
        match self {
            Mode::Query(_) | Mode::Plan { .. } | Mode::CostPlan(_) | Mode::Catalog => Purpose::Read,
            Mode::Write { .. } | Mode::DryRun(_) | Mode::Estimate => Purpose::Write,
        }
    }
}

/// Limits of one execution.
/// A statement's text, and the comment the connector appends to what it sends: a trace's
/// sqlcommenter comment (`call::source_span`), made by the gateway after the statement was
/// decided. Everything else (a parameter's name, the preview) reads the text alone.
#[derive(Debug, Clone, Copy)]
pub struct Statement<'a> {
    pub text: &'a str,
    pub comment: Option<&'a str>,
}

impl<'a> Statement<'a> {
    /// `sent` (the text as the connector sends it: capped, explained) with the comment last.
    pub fn commented(&self, mut sent: String) -> String {
        if let Some(c) = self.comment {
            sent.push_str(c);
        }
        sent
    }

    /// The text itself with the comment last (borrowed when there is none).
    pub fn sent(&self) -> std::borrow::Cow<'a, str> {
        match self.comment {
            Some(c) => format!("{}{c}", self.text).into(),
            None => self.text.into(),
        }
    }
}

impl<'a> From<&'a str> for Statement<'a> {
    fn from(text: &'a str) -> Self {
        Statement {
            text,
            comment: None,
        }
    }
}

impl<'a> From<&'a String> for Statement<'a> {
    fn from(text: &'a String) -> Self {
        Statement::from(text.as_str())
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_rows: u64,
    pub max_bytes: u64,
}

/// A statement parameter, sent in text format so PostgreSQL parses it with the type it
/// inferred for `$n` (exactly as if the literal had been written in the statement).
#[derive(Debug, Clone)]
pub struct TextParam(pub Option<String>);

impl TextParam {
    /// JSON parameter → text: strings as-is, numbers and booleans as written, null as NULL;
    /// arrays and objects as JSON text (for json/jsonb parameters).
    pub fn from_json(v: &Value) -> Self {
        TextParam(match v {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        })
    }
}

impl ToSql for TextParam {
    fn to_sql(
        &self,
        _: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match &self.0 {
            None => Ok(IsNull::Yes),
            Some(s) => {
                out.extend_from_slice(s.as_bytes());
                Ok(IsNull::No)
            }
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _: &Type) -> Format {
        Format::Text
    }

    tokio_postgres::types::to_sql_checked!();
}
