//! Administrative commands that work directly against the control database.

use anyhow::Context;

use super::output::{print_json, print_table};
use super::{GrantsCommand, KeysCommand, SourceAddArgs, SourcesCommand};
use crate::config::Settings;
use crate::control::{
    self, identities, keys, migrate as migrations, policy_file, sources, ControlPool,
};
use crate::fleet::Changed;

fn pool(settings: &Settings) -> anyhow::Result<ControlPool> {
    control::connect_pool(&settings.control).context("connecting to the control database")
}

pub async fn migrate(settings: &Settings) -> anyhow::Result<()> {
    let locks = migrations::LockPolicy::from_settings(&settings.control);
    let applied = migrations::migrate(&pool(settings)?, locks).await?;
    if applied.is_empty() {
        println!("control database is up to date");
    } else {
        println!("applied migrations: {applied:?}");
    }
    Ok(())
}

pub async fn keys(settings: &Settings, cmd: KeysCommand) -> anyhow::Result<()> {
    let pool = pool(settings)?;
    match cmd {
        KeysCommand::Create {
            identity,
            kind,
            rate,
            burst,
            label,
        } => {
            let rate = rate.map(|mut r| {
                if let Some(b) = burst {
                    r.burst = b;
                }
                r
            });
            identities::ensure_identity(&pool, &identity, kind, rate).await?;
            let key = keys::create_key(&pool, &identity, &label).await?;
            println!("{}", key.key);
            eprintln!(
                "Key {} for {identity} ({kind}) created. It is shown only this once; store it now.",
                key.prefix
            );
        }
        KeysCommand::List { identity } => {
            let rows = keys::list_keys(&pool, identity.as_deref()).await?;
            print_table(
                &["PREFIX", "IDENTITY", "KIND", "LABEL", "CREATED", "REVOKED"],
                rows.iter().map(|k| {
                    vec![
                        k.prefix.clone(),
                        k.identity.clone(),
                        k.kind.clone(),
                        k.label.clone(),
                        k.created_at.format("%Y-%m-%d %H:%M:%S").to_string(),
                        k.revoked_at
                            .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                            .unwrap_or_else(|| "-".into()),
                    ]
                }),
            );
        }
        KeysCommand::Revoke { prefix } => {
            let k = keys::revoke_key(&pool, &prefix).await?;
            crate::fleet::announce(&pool, Changed::Keys).await;
            println!(
                "revoked {} of {}; it stops working within {} ms on every replica",
                k.prefix, k.identity, settings.identity.cache_ttl_ms
            );
        }
        KeysCommand::RevokeTokens { identity } => {
            let at = crate::control::token_identities::revoke_tokens(&pool, &identity).await?;
            crate::fleet::announce(&pool, Changed::Keys).await;
            println!(
                "access tokens of {identity} issued until {} are refused within {} ms on every replica",
                at.to_rfc3339(),
                settings.identity.cache_ttl_ms
            );
        }
    }
    Ok(())
}

pub async fn sources(settings: &Settings, cmd: SourcesCommand) -> anyhow::Result<()> {
    let pool = pool(settings)?;
    match cmd {
        SourcesCommand::Add(args) => {
            let s = sources::add_source(&pool, &new_source(*args)).await?;
            crate::fleet::announce(&pool, Changed::Sources).await;
            println!(
                "registered source {} ({}:{})",
                s.id,
                s.host.unwrap_or_default(),
                s.port.unwrap_or(0)
            );
        }
        SourcesCommand::List => {
            let rows = sources::list_sources(&pool).await?;
            print_table(
                &[
                    "ID",
                    "KIND",
                    "ENABLED",
                    "DATABASE",
                    "TLS",
                    "CACHE_TTL_MS",
                    "DESCRIPTION",
                ],
                rows.iter().map(|s| {
                    vec![
                        s.id.clone(),
                        s.kind.as_str().into(),
                        s.enabled.to_string(),
                        match (&s.host, s.port, &s.dbname) {
                            (Some(h), Some(p), Some(d)) => format!("{h}:{p}/{d}"),
                            _ => "-".into(),
                        },
                        s.tls_mode.as_str().into(),
                        s.cache_ttl_ms.to_string(),
                        s.description.clone(),
                    ]
                }),
            );
        }
        SourcesCommand::Enable { id } => {
            sources::set_enabled(&pool, &id, true).await?;
            crate::fleet::announce(&pool, Changed::Sources).await;
            println!("source {id} enabled");
        }
        SourcesCommand::Disable { id } => {
            sources::set_enabled(&pool, &id, false).await?;
            crate::fleet::announce(&pool, Changed::Sources).await;
            println!("source {id} disabled; governed calls to it are refused as unavailable");
        }
        SourcesCommand::Identity {
            id,
            propagation,
            map,
        } => {
            let changes = sources::SourceChanges {
                identity_propagation: propagation,
                identity_roles: (!map.is_empty()).then(|| map.into_iter().collect()),
                ..Default::default()
            };
            let s = sources::update_source(&pool, &id, &changes).await?;
            crate::fleet::announce(&pool, Changed::Sources).await;
            println!(
                "source {id}: identity propagation {}{}",
                s.identity_propagation.as_str(),
                if s.identity_roles.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; roles {}",
                        s.identity_roles
                            .iter()
                            .map(|(i, r)| format!("{i}={r}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            );
        }
        SourcesCommand::Status { remote } => super::remote::sources_status(&remote).await?,
        SourcesCommand::Test { id } => {
            let source = sources::get_source(&pool, &id).await?;
            let probe = crate::sources::postgres::probe(&source).await;
            print_json(&probe)?;
            if !probe.ok {
                anyhow::bail!("source {id} is not reachable");
            }
        }
    }
    Ok(())
}

fn new_source(a: SourceAddArgs) -> sources::NewSource {
    sources::NewSource {
        id: a.id,
        kind: Some(sources::SourceKind::Postgres),
        description: a.description,
        host: Some(a.host),
        port: Some(a.port),
        dbname: Some(a.dbname),
        user: Some(a.user),
        password_env: a.password_env,
        password_file: a.password_file,
        write_user: a.write_user,
        write_password_env: a.write_password_env,
        write_password_file: a.write_password_file,
        tls_mode: Some(a.tls),
        tls_ca_file: a.tls_ca_file,
        search_path: Some(a.search_path),
        statement_timeout_ms: a.statement_timeout_ms,
        max_rows: a.max_rows,
        cache_ttl_ms: a.cache_ttl_ms,
        approvals_required: a.approvals_required,
        approval_preview: a.approval_preview,
        identity_propagation: a.identity_propagation,
        identity_roles: (!a.identity_roles.is_empty())
            .then(|| a.identity_roles.into_iter().collect()),
        ..Default::default()
    }
}

/// `interlock policy apply FILE`.
pub async fn policy_apply(settings: &Settings, file: &std::path::Path) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let parsed = policy_file::AccessFile::parse(&text)
        .with_context(|| format!("{} was not applied", file.display()))?;
    let pool = pool(settings)?;
    let applied = policy_file::apply(&pool, &parsed)
        .await
        .with_context(|| format!("{} was not applied", file.display()))?;
    crate::fleet::announce(&pool, Changed::Keys).await;
    crate::fleet::announce(&pool, Changed::Grants).await;
    print_json(&applied)
}

pub async fn grants(settings: &Settings, cmd: GrantsCommand) -> anyhow::Result<()> {
    let pool = pool(settings)?;
    let client = pool.get().await?;
    match cmd {
        GrantsCommand::Add {
            identity,
            source,
            role,
        } => {
            crate::control::roles::grant_role(&client, &identity, &source, &role).await?;
            crate::fleet::announce(&pool, Changed::Grants).await;
            println!("granted {role} on {source} to {identity}");
        }
        GrantsCommand::Remove {
            identity,
            source,
            role,
        } => {
            if crate::control::roles::revoke_role(&client, &identity, &source, &role).await? {
                crate::fleet::announce(&pool, Changed::Grants).await;
                println!("revoked {role} on {source} from {identity}");
            } else {
                anyhow::bail!("{identity} holds no role {role} on {source}");
            }
        }
    }
    Ok(())
}
