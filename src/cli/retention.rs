//! `interlock audit archive | partitions | verify [--archive]`: the audit log's retention
//! (`crate::retention`, RUNTIME.md "Audit retention").

use std::path::Path;

use anyhow::{bail, Context};
use serde::Serialize;

use super::ledger::{control_pool, read_key, signing_key};
use super::output::print_json;
use crate::config::Settings;
use crate::control::{self, partitions};
use crate::ledger::offline::PrefixHead;
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
    /// The chain alone (the flattened report's `ok` is everything's).
    chain_ok: bool,
    #[serde(flatten)]
    live: control::audit::VerifyReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    archive: Option<ArchiveReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    witness: Option<Witnessed>,
    /// The live records against the tree's leaves.
    tree: control::leaves::LeafReport,
    /// The tree against every stored signed checkpoint.
    checkpoints: control::signed_heads::SignedHeadsReport,
}

/// What a witness file proved.
#[derive(Serialize)]
struct Witnessed {
    checkpoints: usize,
    /// The largest tree size the witness kept.
    latest: i64,
}

/// The live chain and, with `archive`, the archived segments and the seam between them;
/// with `witness`, the witnessed roots against the log's tree.
pub async fn verify(
    settings: &Settings,
    archive: Option<&Path>,
    witness: Option<&Path>,
    key: Option<&str>,
) -> anyhow::Result<()> {
    let pool = control_pool(settings)?;
    let live = control::audit::verify(&pool).await?;
    let verifier_key = || -> anyhow::Result<String> {
        Ok(match key {
            Some(k) => read_key(k)?,
            None => signing_key(settings)?.verifier_key().to_string(),
        })
    };
    let witness = match witness {
        None => None,
        Some(file) => Some(check_witness(&pool, file, &verifier_key()?).await?),
    };
    let archive = match archive {
        None => None,
        Some(dir) => {
            let key = verifier_key()?;
            let report = files::check_archive(dir, &key)
                .with_context(|| format!("checking the archive in {}", dir.display()))?;
            seam(&pool, dir, &report, live.first_seq).await?;
            Some(report)
        }
    };
    let tree = control::leaves::verify(&pool).await?;
    // Signatures are checked with the given key, else the configured one, else not at all
    // (roots and sizes still are).
    let head_key = verifier_key().ok();
    let checkpoints = control::signed_heads::verify(&pool, head_key.as_deref()).await?;
    let (ok, tree_ok, mismatch) = (live.ok, tree.ok, tree.first_mismatch);
    let head_break = checkpoints.first_break.clone();
    // The answer's "ok" holds only when everything checked holds; "chain_ok" is the chain's.
    let mut live = live;
    live.ok = ok && tree_ok && checkpoints.ok;
    print_json(&Verified {
        chain_ok: ok,
        live,
        archive,
        witness,
        tree,
        checkpoints,
    })?;
    if !ok {
        bail!("the audit chain is broken; see first_break");
    }
    if !tree_ok {
        bail!(
            "record {} is not the record the audit tree, and so the signed checkpoints, committed to: the log was rewritten after it was checkpointed",
            mismatch.unwrap_or_default()
        );
    }
    if let Some(b) = head_break {
        bail!(
            "the signed checkpoint of {} records does not hold: {}",
            b.tree_size,
            b.reason
        );
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
    // The live log's chains go on from the heads the database kept when the last archived
    // partition was dropped (`audit verify` checks that); the archive must end there too.
    let (live_first, kept) = match partitions::live_start(pool).await? {
        partitions::LiveStart::Empty => (live_first, None),
        partitions::LiveStart::After { seq, archived } => (seq + 1, archived),
    };
    let ends_as_kept = |last: &crate::ledger::segment::SegmentSummary| {
        kept.as_ref().is_none_or(|k| {
            let heads: Vec<PrefixHead> = k.heads.iter().map(PrefixHead::of).collect();
            hex::encode(&k.last_hash) == last.last_hash && heads == last.heads
        })
    };
    match (report.last_seq, report.segments.last()) {
        (Some(last), _) if last + 1 != live_first => bail!(
            "the archive ends at record {last}, but the live log starts at record {live_first}"
        ),
        (Some(last), Some(segment)) if !ends_as_kept(&segment.summary) => bail!(
            "{}: its end (record {last}, and every chain's last record) is not the one the log kept when it archived that record, which the live records go on from",
            segment.summary.file
        ),
        (None, _) if live_first > 1 => bail!(
            "{}: holds no segment, but the live log starts at record {live_first}",
            dir.display()
        ),
        _ => Ok(()),
    }
}

/// Every checkpoint in the witness file must carry the key's signature and sign a root the
/// log's tree still has: a log rewritten since (records changed, removed or reordered, and
/// chain and tree recomputed) cannot, without the signing key.
async fn check_witness(
    pool: &control::ControlPool,
    file: &Path,
    verifier_key: &str,
) -> anyhow::Result<Witnessed> {
    use std::io::BufRead as _;
    let name = file.display();
    let opened = std::fs::File::open(file).with_context(|| format!("reading {name}"))?;
    let tree = control::ledger::tree_size(pool).await?;
    let (mut checkpoints, mut latest) = (0, 0);
    for (n, line) in std::io::BufReader::new(opened).lines().enumerate() {
        let line = line.with_context(|| format!("reading {name}"))?;
        let n = n + 1;
        let kept: crate::anchoring::witness::WitnessLine = serde_json::from_str(&line)
            .with_context(|| format!("{name} line {n}: not a witness line"))?;
        let signed = crate::ledger::note::verify(&kept.note, verifier_key)
            .map_err(|e| anyhow::anyhow!("{name} line {n}: {e}"))?;
        if signed.size > tree {
            bail!(
                "{name} line {n}: the witness kept a checkpoint of {} records, but the log's tree holds only {tree}: records were removed",
                signed.size
            );
        }
        let root = control::ledger::root(pool, signed.size).await?;
        if root != signed.root {
            bail!(
                "{name} line {n}: the log no longer has the root the checkpoint of {} records signed: the log was rewritten",
                signed.size
            );
        }
        checkpoints += 1;
        latest = latest.max(signed.size as i64);
    }
    Ok(Witnessed {
        checkpoints,
        latest,
    })
}
