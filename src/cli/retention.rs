//! `interlock audit archive | partitions | verify [--archive]`: the audit log's retention
//! (`crate::retention`, RUNTIME.md "Audit retention").

use std::path::Path;

use anyhow::{bail, Context};
use serde::Serialize;

use super::ledger::{control_pool, read_key, signing_key};
use super::output::print_json;
use crate::config::Settings;
use crate::control::{self, partitions};
use crate::retention::files::{self, ArchiveReport};

pub async fn archive(
    settings: &Settings,
    dir: Option<&Path>,
    older_than_days: Option<u64>,
) -> anyhow::Result<()> {
    let configured = settings.audit.archive_dir.trim();
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None if !configured.is_empty() => configured.into(),
        None => bail!("give --dir DIR or set audit.archive_dir"),
    };
    let days = older_than_days.unwrap_or(settings.audit.retain_days);
    let before = (days > 0).then(|| {
        chrono::Utc::now()
            - chrono::Duration::days(i64::try_from(days).unwrap_or(i64::MAX / 86_400_000))
    });
    let key = signing_key(settings)?;
    let pool = control_pool(settings)?;
    let done = crate::retention::archive(&pool, &key, &dir, before).await?;
    print_json(&serde_json::json!({ "archived": done, "dir": dir }))
}

pub async fn list(settings: &Settings) -> anyhow::Result<()> {
    print_json(&partitions::list(&control_pool(settings)?).await?)
}

#[derive(Serialize)]
struct Verified {
    #[serde(flatten)]
    live: control::audit::VerifyReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    archive: Option<ArchiveReport>,
}

/// The live chain and, with `archive`, the archived segments and the seam between them.
pub async fn verify(
    settings: &Settings,
    archive: Option<&Path>,
    key: Option<&str>,
) -> anyhow::Result<()> {
    let pool = control_pool(settings)?;
    let live = control::audit::verify(&pool).await?;
    let archive = match archive {
        None => None,
        Some(dir) => {
            let key = match key {
                Some(k) => read_key(k)?,
                None => signing_key(settings)?.verifier_key().to_string(),
            };
            let report = files::check_archive(dir, &key)
                .with_context(|| format!("checking the archive in {}", dir.display()))?;
            seam(&pool, dir, &report, live.first_seq).await?;
            Some(report)
        }
    };
    let ok = live.ok;
    print_json(&Verified { live, archive })?;
    if !ok {
        bail!("the audit chain is broken; see first_break");
    }
    Ok(())
}

/// Every partition the log archived must be in `dir` as the very file it wrote, and the
/// live log must start right after the archive's last record.
async fn seam(
    pool: &control::ControlPool,
    dir: &Path,
    report: &ArchiveReport,
    live_first: i64,
) -> anyhow::Result<()> {
    for p in partitions::list(pool)
        .await?
        .iter()
        .filter(|p| p.is_archived())
    {
        let file = p.archive_file.as_deref().unwrap_or_default();
        let Some(found) = report.segments.iter().find(|s| s.summary.file == file) else {
            bail!(
                "{file}: records {}..{} were archived to it, but it is not in {}",
                p.lower,
                p.upper - 1,
                dir.display()
            );
        };
        if p.archive_sha256.as_deref() != Some(found.sha256.as_str()) {
            bail!(
                "{file}: is not the file that was archived (SHA-256 {}, archived {})",
                found.sha256,
                p.archive_sha256.as_deref().unwrap_or("unknown")
            );
        }
    }
    let (live_first, live_prev) = match partitions::live_start(pool).await? {
        partitions::LiveStart::Empty => (live_first, None),
        partitions::LiveStart::After { seq, prev_hash, .. } => {
            (seq + 1, Some(hex::encode(prev_hash)))
        }
    };
    match report.last_seq {
        Some(last) if last + 1 != live_first => bail!(
            "the archive ends at record {last}, but the live log starts at record {live_first}"
        ),
        Some(last) if live_prev.is_some() && report.last_hash() != live_prev.as_deref() => bail!(
            "record {live_first} does not chain to the archive's last record {last} (its prev_hash is another)"
        ),
        None if live_first > 1 => bail!(
            "{}: holds no segment, but the live log starts at record {live_first}",
            dir.display()
        ),
        _ => Ok(()),
    }
}
