//! Registered sources.

use chrono::{DateTime, Utc};
use rand::RngCore;
use serde::{Deserialize, Serialize};

use super::{conflict_on_unique, ControlError, ControlPool};
use crate::secrets::SecretRef;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Postgres,
    Documents,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Postgres => "postgres",
            SourceKind::Documents => "documents",
        }
    }
}

pub use crate::pg_tls::TlsMode;

/// A stored TLS mode.
fn parse_tls_mode(s: &str) -> Result<TlsMode, ControlError> {
    TlsMode::from_name(s).ok_or_else(|| ControlError::Invalid(format!("unknown tls mode {s:?}")))
}

/// Database login of one of a source's pools. `password` is a reference, never a secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Login {
    pub user: String,
    pub password: SecretRef,
}

/// How a queued write is previewed for its approvers (`approval_preview`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PreviewMode {
    /// Executed in a transaction that is always rolled back: the rows affected, and the
    /// rows `RETURNING` gives. Opt-in: a rolled-back run still consumes sequence values
    /// and runs triggers, whose effects outside the database are not rolled back.
    DryRun,
    /// `EXPLAIN (FORMAT JSON)`: the plan and the planner's row estimate; nothing runs.
    #[default]
    Explain,
    Off,
}

impl PreviewMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PreviewMode::DryRun => "dry_run",
            PreviewMode::Explain => "explain",
            PreviewMode::Off => "off",
        }
    }

    pub fn parse(s: &str) -> Result<Self, ControlError> {
        match s {
            "dry_run" => Ok(PreviewMode::DryRun),
            "explain" => Ok(PreviewMode::Explain),
            "off" => Ok(PreviewMode::Off),
            other => Err(ControlError::Invalid(format!(
                "unknown approval preview {other:?} (dry_run, explain or off)"
            ))),
        }
    }
}

/// Whether governed transactions carry the caller's identity into the source
/// (`identity_propagation`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Propagation {
    #[default]
    None,
    /// Every governed statement runs with `interlock.identity` (the caller's name; for an
    /// approved write, the requester's) and `interlock.roles` (their roles on the source,
    /// comma-separated) set, for the source's row-level security: for a read, on its
    /// connection's session (`sources::postgres::session`); for a write, transaction-local.
    Settings,
    /// As `settings`, and the role is also set (`SET ROLE`; for a write `SET LOCAL ROLE`) to
    /// the PostgreSQL role mapped from the caller's identity in the source's
    /// `identity_roles`. The mapping is explicit: an identity without an entry is refused.
    Role,
}

impl Propagation {
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::None => "none",
            Propagation::Settings => "settings",
            Propagation::Role => "role",
        }
    }

    pub fn parse(s: &str) -> Result<Self, ControlError> {
        match s {
            "none" => Ok(Propagation::None),
            "settings" => Ok(Propagation::Settings),
            "role" => Ok(Propagation::Role),
            other => Err(ControlError::Invalid(format!(
                "unknown identity propagation {other:?} (none, settings or role)"
            ))),
        }
    }
}

impl std::str::FromStr for Propagation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Propagation::parse(s).map_err(|e| e.to_string())
    }
}

/// Identity name → PostgreSQL role, for `identity_propagation = "role"`.
pub type IdentityRoles = std::collections::BTreeMap<String, String>;

/// Checks an identity-to-role mapping: names and roles non-empty, roles at most
/// PostgreSQL's identifier length.
fn check_identity_roles(roles: &IdentityRoles) -> Result<(), ControlError> {
    for (identity, role) in roles {
        if identity.trim().is_empty() || role.trim().is_empty() {
            return Err(ControlError::Invalid(format!(
                "identity_roles: {identity:?} = {role:?} needs both an identity name and a role"
            )));
        }
        if role.len() > 63 || role.contains('\0') {
            return Err(ControlError::Invalid(format!(
                "identity_roles: {role:?} is not a PostgreSQL role name (at most 63 bytes)"
            )));
        }
    }
    Ok(())
}

/// A registered source as stored in the control database.
#[derive(Debug, Clone, Serialize)]
pub struct Source {
    pub id: String,
    pub kind: SourceKind,
    pub description: String,
    pub enabled: bool,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub dbname: Option<String>,
    /// Login of the read pool (least privilege: SELECT only).
    pub read_login: Option<Login>,
    /// Login used to execute approved writes; the read login when absent.
    pub write_login: Option<Login>,
    pub tls_mode: TlsMode,
    pub tls_ca_file: Option<String>,
    pub search_path: Vec<String>,
    pub statement_timeout_ms: u32,
    pub max_rows: u32,
    pub max_bytes: u64,
    pub pool_size: u32,
    pub cache_ttl_ms: u32,
    pub approval_ttl_secs: u32,
    pub approvals_required: u32,
    /// How a queued write is previewed for its approvers.
    pub approval_preview: PreviewMode,
    /// Whether governed transactions carry the caller's identity into the source.
    pub identity_propagation: Propagation,
    /// With `identity_propagation = "role"`: the PostgreSQL role each identity runs as.
    pub identity_roles: IdentityRoles,
    #[serde(skip)]
    pub mask_key: Vec<u8>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What an operator supplies to register a source. Limits left `None` take the defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewSource {
    pub id: String,
    pub kind: Option<SourceKind>,
    #[serde(default)]
    pub description: String,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub dbname: Option<String>,
    pub user: Option<String>,
    pub password_env: Option<String>,
    pub password_file: Option<String>,
    pub write_user: Option<String>,
    pub write_password_env: Option<String>,
    pub write_password_file: Option<String>,
    pub tls_mode: Option<TlsMode>,
    pub tls_ca_file: Option<String>,
    pub search_path: Option<Vec<String>>,
    pub statement_timeout_ms: Option<u32>,
    pub max_rows: Option<u32>,
    pub max_bytes: Option<u64>,
    pub pool_size: Option<u32>,
    pub cache_ttl_ms: Option<u32>,
    pub approval_ttl_secs: Option<u32>,
    pub approvals_required: Option<u32>,
    pub approval_preview: Option<PreviewMode>,
    pub identity_propagation: Option<Propagation>,
    pub identity_roles: Option<IdentityRoles>,
}

const COLUMNS: &str =
    "id, kind, description, enabled, host, port, dbname, read_user, read_password_env,
    read_password_file, write_user, write_password_env, write_password_file, tls_mode, tls_ca_file,
    search_path, statement_timeout_ms, max_rows, max_bytes, pool_size, cache_ttl_ms,
    approval_ttl_secs, approvals_required, approval_preview, identity_propagation, identity_roles,
    mask_key, created_at, updated_at";

fn from_row(r: &tokio_postgres::Row) -> Result<Source, ControlError> {
    let kind: String = r.get("kind");
    let login = |user: &str, env: &str, file: &str| {
        r.get::<_, Option<String>>(user).map(|user| Login {
            user,
            password: SecretRef::from_options(
                r.get::<_, Option<String>>(env).as_deref(),
                r.get::<_, Option<String>>(file).as_deref(),
            ),
        })
    };
    let non_negative = |name: &str| u32::try_from(r.get::<_, i32>(name)).unwrap_or(0);
    Ok(Source {
        id: r.get("id"),
        kind: match kind.as_str() {
            "postgres" => SourceKind::Postgres,
            "documents" => SourceKind::Documents,
            other => {
                return Err(ControlError::Invalid(format!(
                    "unknown source kind {other:?}"
                )))
            }
        },
        description: r.get("description"),
        enabled: r.get("enabled"),
        host: r.get("host"),
        port: r
            .get::<_, Option<i32>>("port")
            .and_then(|p| u16::try_from(p).ok()),
        dbname: r.get("dbname"),
        read_login: login("read_user", "read_password_env", "read_password_file"),
        write_login: login("write_user", "write_password_env", "write_password_file"),
        tls_mode: parse_tls_mode(r.get("tls_mode"))?,
        tls_ca_file: r.get("tls_ca_file"),
        search_path: r.get("search_path"),
        statement_timeout_ms: non_negative("statement_timeout_ms"),
        max_rows: non_negative("max_rows"),
        max_bytes: u64::try_from(r.get::<_, i64>("max_bytes")).unwrap_or(0),
        pool_size: non_negative("pool_size"),
        cache_ttl_ms: non_negative("cache_ttl_ms"),
        approval_ttl_secs: non_negative("approval_ttl_secs"),
        approvals_required: non_negative("approvals_required"),
        approval_preview: PreviewMode::parse(r.get("approval_preview"))?,
        identity_propagation: Propagation::parse(r.get("identity_propagation"))?,
        identity_roles: r
            .get::<_, tokio_postgres::types::Json<IdentityRoles>>("identity_roles")
            .0,
        mask_key: r.get("mask_key"),
        created_at: r.get("created_at"),
        updated_at: r.get("updated_at"),
    })
}

fn check_new(s: &NewSource) -> Result<SourceKind, ControlError> {
    let kind = s.kind.unwrap_or(SourceKind::Postgres);
    if s.password_env.is_some() && s.password_file.is_some() {
        return Err(ControlError::Invalid(
            "give the password either by environment variable or by file, not both".into(),
        ));
    }
    if s.write_password_env.is_some() && s.write_password_file.is_some() {
        return Err(ControlError::Invalid(
            "give the write password either by environment variable or by file, not both".into(),
        ));
    }
    if kind == SourceKind::Postgres {
        for (what, v) in [("host", &s.host), ("dbname", &s.dbname), ("user", &s.user)] {
            if v.as_deref().is_none_or(|v| v.trim().is_empty()) {
                return Err(ControlError::Invalid(format!(
                    "a postgres source needs {what}"
                )));
            }
        }
        if s.port.is_none() {
            return Err(ControlError::Invalid("a postgres source needs port".into()));
        }
    }
    if s.tls_mode == Some(TlsMode::VerifyFull) && s.tls_ca_file.is_none() {
        return Err(ControlError::Invalid(
            "tls mode verify-full needs a CA file (tls_ca_file) to verify the server against"
                .into(),
        ));
    }
    if let Some(roles) = &s.identity_roles {
        check_identity_roles(roles)?;
    }
    Ok(kind)
}

/// Registers a source.
pub async fn add_source(pool: &ControlPool, s: &NewSource) -> Result<Source, ControlError> {
    let kind = check_new(s)?;
    let mut mask_key = vec![0u8; 32];
    rand::thread_rng().fill_bytes(&mut mask_key);
    let client = pool.get().await?;
    let to_i32 =
        |v: Option<u32>, default: i32| v.map_or(default, |v| i32::try_from(v).unwrap_or(i32::MAX));
    let port = s.port.map(i32::from);
    let max_bytes = s
        .max_bytes
        .map_or(4_194_304, |v| i64::try_from(v).unwrap_or(i64::MAX));
    let search_path = s
        .search_path
        .clone()
        .unwrap_or_else(|| vec!["public".into()]);
    let tls = s.tls_mode.unwrap_or(TlsMode::Disable).as_str();
    let row = client
        .query_one(
            &format!(
                "INSERT INTO sources (id, kind, description, host, port, dbname, read_user,
                    read_password_env, read_password_file, write_user, write_password_env,
                    write_password_file, tls_mode, tls_ca_file, search_path, statement_timeout_ms,
                    max_rows, max_bytes, pool_size, cache_ttl_ms, approval_ttl_secs,
                    approvals_required, mask_key, approval_preview, identity_propagation, identity_roles)
                 VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19,$20,$21,$22,$23,$24,$25,$26)
                 RETURNING {COLUMNS}"
            ),
            &[
                &s.id,
                &kind.as_str(),
                &s.description,
                &s.host,
                &port,
                &s.dbname,
                &s.user,
                &s.password_env,
                &s.password_file,
                &s.write_user,
                &s.write_password_env,
                &s.write_password_file,
                &tls,
                &s.tls_ca_file,
                &search_path,
                &to_i32(s.statement_timeout_ms, 30_000),
                &to_i32(s.max_rows, 1000),
                &max_bytes,
                &to_i32(s.pool_size, 8),
                &to_i32(s.cache_ttl_ms, 0),
                &to_i32(s.approval_ttl_secs, 86_400),
                &to_i32(s.approvals_required, 1),
                &mask_key,
                &s.approval_preview.unwrap_or_default().as_str(),
                &s.identity_propagation.unwrap_or_default().as_str(),
                &tokio_postgres::types::Json(s.identity_roles.clone().unwrap_or_default()),
            ],
        )
        .await
        .map_err(|e| conflict_on_unique(e, || format!("a source with id {:?} already exists", s.id)))?;
    from_row(&row)
}

pub async fn list_sources(pool: &ControlPool) -> Result<Vec<Source>, ControlError> {
    let client = pool.get().await?;
    let rows = client
        .query(&format!("SELECT {COLUMNS} FROM sources ORDER BY id"), &[])
        .await?;
    rows.iter().map(from_row).collect()
}

pub async fn get_source(pool: &ControlPool, id: &str) -> Result<Source, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            &format!("SELECT {COLUMNS} FROM sources WHERE id = $1"),
            &[&id],
        )
        .await?
        .ok_or_else(|| ControlError::NotFound(format!("no source with id {id:?}")))?;
    from_row(&row)
}

/// Enables or disables a source; returns the updated source.
pub async fn set_enabled(
    pool: &ControlPool,
    id: &str,
    enabled: bool,
) -> Result<Source, ControlError> {
    let client = pool.get().await?;
    let row = client
        .query_opt(
            &format!("UPDATE sources SET enabled = $2, updated_at = now() WHERE id = $1 RETURNING {COLUMNS}"),
            &[&id, &enabled],
        )
        .await?
        .ok_or_else(|| ControlError::NotFound(format!("no source with id {id:?}")))?;
    from_row(&row)
}

/// Sets the result-cache TTL of a source (0 turns caching off).
pub async fn set_cache_ttl(pool: &ControlPool, id: &str, ttl_ms: u32) -> Result<(), ControlError> {
    let client = pool.get().await?;
    let ttl =
        i32::try_from(ttl_ms).map_err(|_| ControlError::Invalid("cache TTL too large".into()))?;
    let n = client
        .execute(
            "UPDATE sources SET cache_ttl_ms = $2, updated_at = now() WHERE id = $1",
            &[&id, &ttl],
        )
        .await?;
    if n == 0 {
        return Err(ControlError::NotFound(format!("no source with id {id:?}")));
    }
    Ok(())
}

/// Fields an operator may change on a registered source (secrets by reference only).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceChanges {
    pub description: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub dbname: Option<String>,
    pub user: Option<String>,
    pub password_env: Option<String>,
    pub password_file: Option<String>,
    pub tls_mode: Option<TlsMode>,
    pub tls_ca_file: Option<String>,
    pub statement_timeout_ms: Option<u32>,
    pub max_rows: Option<u32>,
    pub max_bytes: Option<u64>,
    pub pool_size: Option<u32>,
    pub cache_ttl_ms: Option<u32>,
    pub approval_ttl_secs: Option<u32>,
    pub approvals_required: Option<u32>,
    pub approval_preview: Option<PreviewMode>,
    pub identity_propagation: Option<Propagation>,
    pub identity_roles: Option<IdentityRoles>,
}

/// Applies `c` to source `id`; untouched fields keep their values. Setting one password
/// reference clears the other.
pub async fn update_source(
    pool: &ControlPool,
    id: &str,
    c: &SourceChanges,
) -> Result<Source, ControlError> {
    if let Some(roles) = &c.identity_roles {
        check_identity_roles(roles)?;
    }
    if c.password_env.is_some() && c.password_file.is_some() {
        return Err(ControlError::Invalid(
            "give the password either by environment variable or by file, not both".into(),
        ));
    }
    let client = pool.get().await?;
    let to_i32 = |v: Option<u32>| v.map(|v| i32::try_from(v).unwrap_or(i32::MAX));
    let port = c.port.map(i32::from);
    let max_bytes = c.max_bytes.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
    let tls = c.tls_mode.map(TlsMode::as_str);
    let row = client
        .query_opt(
            &format!(
                "UPDATE sources SET
                    description = coalesce($2, description), host = coalesce($3, host),
                    port = coalesce($4, port), dbname = coalesce($5, dbname), read_user = coalesce($6, read_user),
                    read_password_env = CASE WHEN $7::text IS NOT NULL THEN $7 WHEN $8::text IS NOT NULL THEN NULL ELSE read_password_env END,
                    read_password_file = CASE WHEN $8::text IS NOT NULL THEN $8 WHEN $7::text IS NOT NULL THEN NULL ELSE read_password_file END,
                    tls_mode = coalesce($9, tls_mode), tls_ca_file = coalesce($10, tls_ca_file),
                    statement_timeout_ms = coalesce($11, statement_timeout_ms), max_rows = coalesce($12, max_rows),
                    max_bytes = coalesce($13, max_bytes), pool_size = coalesce($14, pool_size),
                    cache_ttl_ms = coalesce($15, cache_ttl_ms), approval_ttl_secs = coalesce($16, approval_ttl_secs),
                    approvals_required = coalesce($17, approvals_required),
                    approval_preview = coalesce($18, approval_preview),
                    identity_propagation = coalesce($19, identity_propagation),
                    identity_roles = coalesce($20, identity_roles), updated_at = now()
                  WHERE id = $1 RETURNING {COLUMNS}"
            ),
            &[
                &id,
                &c.description,
                &c.host,
                &port,
                &c.dbname,
                &c.user,
                &c.password_env,
                &c.password_file,
                &tls,
                &c.tls_ca_file,
                &to_i32(c.statement_timeout_ms),
                &to_i32(c.max_rows),
                &max_bytes,
                &to_i32(c.pool_size),
                &to_i32(c.cache_ttl_ms),
                &to_i32(c.approval_ttl_secs),
                &to_i32(c.approvals_required),
                &c.approval_preview.map(PreviewMode::as_str),
                &c.identity_propagation.map(Propagation::as_str),
                &c.identity_roles.clone().map(tokio_postgres::types::Json),
            ],
        )
        .await
        .map_err(|e| conflict_on_unique(e, || format!("source {id:?}")))?
        .ok_or_else(|| ControlError::NotFound(format!("no source with id {id:?}")))?;
    from_row(&row)
}
