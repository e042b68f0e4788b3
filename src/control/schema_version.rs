//! Which control-database schemas this gateway can serve.
//!
//! A fleet is upgraded one replica at a time, so for a while replicas of two releases share
//! one control database whose schema the newer release has already migrated. Every applied
//! migration is a row of `schema_migrations`; a row this release has no migration for was
//! applied by a newer release, and its `compatible_from` says the oldest migration a gateway
//! must know to serve the schema with it applied (NULL: that migration itself). A gateway
//! starts on a newer schema only when every migration it does not know declared that it
//! keeps this gateway's statements working (an *expand* migration); otherwise it refuses,
//! naming both versions, rather than fail on some query later.

use tokio_postgres::error::SqlState;

use super::migrate::latest;
use super::ControlError;

/// A migration applied by a newer release than this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    pub version: i32,
    pub name: String,
    /// The oldest migration a gateway must know to serve the schema with this one applied.
    pub needs: i32,
}

/// The applied migrations this release does not know, in order (none when the schema is
/// not newer, or not there yet).
pub async fn unknown_migrations(
    client: &tokio_postgres::Client,
) -> Result<Vec<Unknown>, ControlError> {
    // Through to_jsonb: a schema_migrations from before `compatible_from` has no such column.
    let rows = client
        .query(
            "SELECT version, name, (to_jsonb(m) ->> 'compatible_from')::integer \
             FROM schema_migrations m WHERE version > $1 ORDER BY version",
            &[&latest().version],
        )
        .await;
    let rows = match rows {
        Ok(rows) => rows,
        Err(e) if e.code() == Some(&SqlState::UNDEFINED_TABLE) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    Ok(rows
        .iter()
        .map(|r| {
            let version: i32 = r.get(0);
            Unknown {
                version,
                name: r.get(1),
                needs: r.get::<_, Option<i32>>(2).unwrap_or(version),
            }
        })
        .collect())
}

/// Why this gateway cannot serve a schema with `unknown` applied, if it cannot.
pub fn refusal(unknown: &[Unknown]) -> Option<String> {
    let known = latest();
    let blocking = unknown.iter().find(|u| u.needs > known.version)?;
    let newest = unknown.last().unwrap_or(blocking);
    Some(format!(
        "the control database's schema is newer than this gateway can serve: it is at \
         migration {} ({}), applied by a newer release, and since migration {} ({}) it needs \
         a gateway that knows migration {} or later; this gateway (InterLock {}) knows \
         migrations up to {} ({}). Run the newer release (an upgrade is finished when every \
         replica runs it); a schema is never migrated back (docs/deploy.md, \"Upgrades\")",
        newest.version,
        newest.name,
        blocking.version,
        blocking.name,
        blocking.needs,
        env!("CARGO_PKG_VERSION"),
        known.version,
        known.name,
    ))
}

/// Whether this gateway may serve a schema with `unknown` applied: `Err` with why not, or
/// `Ok` (a newer schema it can serve is logged: an upgrade is under way).
pub fn judge(unknown: &[Unknown]) -> Result<(), String> {
    if let Some(why) = refusal(unknown) {
        return Err(why);
    }
    if let Some(newest) = unknown.last() {
        tracing::warn!(
            schema = newest.version,
            known = latest().version,
            "the control database has migrations of a newer release that keep this one \
             working (expand migrations); finish the upgrade by running that release"
        );
    }
    Ok(())
}

/// Refuses a schema this gateway cannot serve ([`judge`]).
pub async fn check(client: &tokio_postgres::Client) -> Result<(), ControlError> {
    judge(&unknown_migrations(client).await?).map_err(ControlError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown(version: i32, needs: i32) -> Unknown {
        Unknown {
            version,
            name: format!("{version:04}_next"),
            needs,
        }
    }

    #[test]
    fn a_newer_schema_is_refused_unless_every_unknown_migration_keeps_this_release_working() {
        let known = latest().version;
        let cases: &[(&[Unknown], Option<i32>)] = &[
            (&[], None),
            (&[unknown(known + 1, known)], None),
            (
                &[unknown(known + 1, known), unknown(known + 2, known - 3)],
                None,
            ),
            (&[unknown(known + 1, known + 1)], Some(known + 1)),
            (
                &[unknown(known + 1, known), unknown(known + 2, known + 1)],
                Some(known + 2),
            ),
        ];
        for (applied, refused_at) in cases {
            let why = refusal(applied);
            assert_eq!(why.is_some(), refused_at.is_some(), "{applied:?}: {why:?}");
            if let (Some(why), Some(at)) = (why, refused_at) {
                let newest = applied.last().map(|u| u.version).unwrap_or(0);
                for needle in [
                    format!("at migration {newest}"),
                    format!("since migration {at}"),
                    format!("knows migrations up to {known}"),
                    env!("CARGO_PKG_VERSION").to_string(),
                ] {
                    assert!(why.contains(&needle), "{needle:?} missing from: {why}");
                }
            }
        }
    }
}
