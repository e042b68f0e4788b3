//! `interlock audit verify --offline | keygen | checkpoint | prove | export |
//! verify-proof`: the audit log's chain, signed checkpoints, proofs and exports
//! (`crate::ledger`, docs/audit-proofs.md); archiving is `super::retention`.

use std::io::Write as _;

use anyhow::{bail, Context};

use super::output::print_json;
use super::AuditCommand;
use crate::config::Settings;
use crate::control::{self, ledger};
use crate::ledger::offline::{CheckpointFile, ExportedRecord, OfflineCheck, Prefix, EXPORT_FORMAT};
use crate::ledger::proof::{
    self, ConsistencyBundle, InclusionBundle, CONSISTENCY_FORMAT, INCLUSION_FORMAT,
};
use crate::ledger::CheckpointKey;

pub async fn run(settings: &Settings, cmd: AuditCommand) -> anyhow::Result<()> {
    match cmd {
        AuditCommand::Verify {
            offline: Some(dir),
            key: Some(key),
            archive,
            ..
        } => verify_offline(&dir, &key, archive.as_deref()),
        AuditCommand::Verify {
            archive,
            key,
            witness,
            ..
        } => {
            super::retention::verify(
                settings,
                archive.as_deref(),
                witness.as_deref(),
                key.as_deref(),
            )
            .await
        }
        AuditCommand::Archive {
            dir,
            older_than_days,
        } => super::retention::archive(settings, dir.as_deref(), older_than_days).await,
        AuditCommand::Partitions => super::retention::list(settings).await,
        AuditCommand::Keygen { name, out } => keygen(&name, &out),
        AuditCommand::Checkpoint => checkpoint(settings).await,
        AuditCommand::Prove {
            seq: Some(seq),
            tree_size,
            ..
        } => prove_record(settings, seq, tree_size).await,
        AuditCommand::Prove {
            request_id: Some(id),
            tree_size,
            ..
        } => prove_records_of(settings, control::audit::RecordsOf::Request(id), tree_size).await,
        AuditCommand::Prove {
            approval_id: Some(id),
            tree_size,
            ..
        } => prove_records_of(settings, control::audit::RecordsOf::Approval(id), tree_size).await,
        AuditCommand::Prove {
            from: Some(from),
            to: Some(to),
            ..
        } => prove_consistency(settings, from, to).await,
        AuditCommand::Prove { .. } => {
            bail!("give --seq N, --request-id ID or --approval-id ID, or --from A --to B")
        }
        AuditCommand::Export { dir } => export(settings, &dir).await,
        AuditCommand::VerifyProof { file, key } => verify_proof(&file, &key),
    }
}

pub(super) fn control_pool(settings: &Settings) -> anyhow::Result<control::ControlPool> {
    control::connect_pool(&settings.control).context("connecting to the control database")
}

use control_pool as pool;

pub(super) fn signing_key(settings: &Settings) -> anyhow::Result<CheckpointKey> {
    settings
        .audit
        .checkpoint_key()
        .map_err(anyhow::Error::msg)?
        .context("no checkpoint key: set audit.checkpoint_key_file (see `interlock audit keygen`)")
}

fn keygen(name: &str, out: &std::path::Path) -> anyhow::Result<()> {
    let skey = CheckpointKey::generate(name)?;
    let key = CheckpointKey::parse(&skey)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(out).with_context(|| {
        format!(
            "creating {} (an existing key is never overwritten)",
            out.display()
        )
    })?;
    file.write_all(format!("{skey}\n").as_bytes())?;
    println!("{}", key.verifier_key());
    Ok(())
}

async fn checkpoint(settings: &Settings) -> anyhow::Result<()> {
    let key = signing_key(settings)?;
    let tsa = crate::anchoring::TimestampAuthority::new(
        &settings.audit.timestamp_url,
        std::time::Duration::from_millis(settings.audit.timestamp_timeout_ms),
    )
    .map_err(anyhow::Error::msg)?;
    let anchors = crate::anchoring::Anchors {
        tsa,
        witness: crate::anchoring::WitnessFile::new(&settings.audit.witness_file),
    };
    match crate::anchoring::checkpoint_now(&pool(settings)?, &key, &anchors, None).await? {
        Some(c) => {
            print!("{}", c.note);
            if let Some(e) = &c.timestamp_error {
                eprintln!("not timestamped yet: {e}");
            }
        }
        None => bail!("the audit log is empty: there is nothing to sign yet"),
    }
    Ok(())
}

async fn prove_record(settings: &Settings, seq: i64, size: Option<u64>) -> anyhow::Result<()> {
    print_json(&ledger::prove_record(&pool(settings)?, seq, size).await?)
}

/// Proves the one record that `of` finds; none or several is an error naming their seqs.
async fn prove_records_of(
    settings: &Settings,
    of: control::audit::RecordsOf,
    size: Option<u64>,
) -> anyhow::Result<()> {
    let seqs = control::audit::seqs_of(&pool(settings)?, &of).await?;
    match seqs.as_slice() {
        [] => bail!("no audit record of {of}"),
        [seq] => prove_record(settings, *seq, size).await,
        many => bail!(
            "{of} has {} records (seq {}); prove each with --seq",
            many.len(),
            many.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

async fn prove_consistency(settings: &Settings, from: u64, to: u64) -> anyhow::Result<()> {
    print_json(&ledger::prove_consistency(&pool(settings)?, from, to).await?)
}

async fn export(settings: &Settings, dir: &std::path::Path) -> anyhow::Result<()> {
    use base64::Engine as _;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pool = pool(settings)?;
    let prefix = match control::partitions::live_start(&pool).await? {
        control::partitions::LiveStart::After {
            seq,
            archived: Some(end),
        } if seq > 0 => {
            let frontier = ledger::frontier(&pool, seq.unsigned_abs()).await?;
            Prefix::of(seq, &end.last_hash, &end.heads, &frontier)
        }
        control::partitions::LiveStart::After { seq, archived: None } if seq > 0 => bail!(
            "the log starts at record {} but no archived partition ends at record {seq}: records before it are missing",
            seq + 1
        ),
        _ => Prefix::none(),
    };
    let records_path = dir.join("records.jsonl");
    let mut records = std::io::BufWriter::new(
        std::fs::File::create(&records_path)
            .with_context(|| format!("creating {}", records_path.display()))?,
    );
    let mut failed: Option<std::io::Error> = None;
    let count = control::audit::each(&pool, |r| {
        let line = ExportedRecord {
            seq: r.seq,
            place: crate::ledger::place::Place::of(&r),
            record: r.record,
            prev_hash: hex::encode(&r.prev_hash),
            hash: hex::encode(&r.hash),
        };
        let text = serde_json::to_string(&line)
            .map_err(|e| control::ControlError::Invalid(e.to_string()))?;
        if failed.is_none() {
            if let Err(e) = writeln!(records, "{text}") {
                failed = Some(e);
            }
        }
        Ok(())
    })
    .await?;
    if let Some(e) = failed {
        return Err(e).with_context(|| format!("writing {}", records_path.display()));
    }
    records.flush()?;
    // Checkpoints of archived records only are the archive's to prove.
    let checkpoints: Vec<_> = ledger::all(&pool)
        .await?
        .into_iter()
        .filter(|c| c.tree_size >= prefix.seq)
        .collect();
    let mut stamped = 0;
    for c in &checkpoints {
        let base = dir.join(format!("checkpoint-{}", c.tree_size));
        std::fs::write(base.with_extension("note"), &c.note)?;
        if let Some(t) = &c.timestamp {
            let der = base64::engine::general_purpose::STANDARD.decode(t)?;
            std::fs::write(base.with_extension("tsr"), der)?;
            stamped += 1;
        }
    }
    if let Ok(Some(key)) = settings.audit.checkpoint_key() {
        std::fs::write(
            dir.join("verifier-key.txt"),
            format!("{}\n", key.verifier_key()),
        )?;
    }
    let manifest = serde_json::json!({
        "format": EXPORT_FORMAT,
        "records": count,
        "prefix": prefix,
        "checkpoints": checkpoints.iter().map(|c| c.tree_size).collect::<Vec<_>>(),
        "exported_at": chrono::Utc::now(),
    });
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&manifest)?,
    )?;
    println!(
        "{count} records and {} checkpoints ({stamped} timestamped) written to {}",
        checkpoints.len(),
        dir.display()
    );
    Ok(())
}

pub(super) fn read_key(key: &str) -> anyhow::Result<String> {
    Ok(match key.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?,
        None => key.to_string(),
    }
    .trim()
    .to_string())
}

/// Checks an export (a directory with `manifest.json`) or an archive (a directory of
/// segments) offline; with `archive`, an export must continue that archive.
fn verify_offline(
    dir: &std::path::Path,
    key: &str,
    archive: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let key = read_key(key)?;
    let archived = match archive {
        Some(a) => Some(
            crate::retention::files::check_archive(a, &key)
                .with_context(|| format!("checking the archive in {}", a.display()))?,
        ),
        None => None,
    };
    if !dir.join("manifest.json").exists()
        && !crate::retention::files::segment_files(dir)?.is_empty()
    {
        if archive.is_some() {
            bail!("{}: is an archive itself; give it alone", dir.display());
        }
        let report = crate::retention::files::check_archive(dir, &key)?;
        return print_json(&report);
    }
    verify_export(dir, &key, archived)
}

fn verify_export(
    dir: &std::path::Path,
    key: &str,
    archived: Option<crate::retention::files::ArchiveReport>,
) -> anyhow::Result<()> {
    use std::io::BufRead as _;
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("manifest.json"))
            .with_context(|| format!("{}: no manifest.json (not an export?)", dir.display()))?,
    )
    .context("manifest.json is not JSON")?;
    if manifest["format"] != EXPORT_FORMAT {
        bail!(
            "manifest.json: not an export this verifier knows ({})",
            manifest["format"]
        );
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let Some(size) = name
            .strip_prefix("checkpoint-")
            .and_then(|n| n.strip_suffix(".note"))
        else {
            continue;
        };
        let tsr = format!("checkpoint-{size}.tsr");
        let timestamp = match std::fs::read(dir.join(&tsr)) {
            Ok(der) => Some((tsr, der)),
            Err(_) => None,
        };
        files.push(CheckpointFile {
            note: std::fs::read_to_string(dir.join(&name))?,
            name,
            timestamp,
        });
    }
    // Every checkpoint the manifest lists must be there.
    for size in manifest["checkpoints"].as_array().into_iter().flatten() {
        let name = format!("checkpoint-{size}.note");
        if !files.iter().any(|f| f.name == name) {
            bail!("{name}: listed in manifest.json but missing");
        }
    }
    let prefix: Prefix = match manifest.get("prefix") {
        Some(p) => serde_json::from_value(p.clone()).context("manifest.json: its prefix")?,
        None => Prefix::none(),
    };
    if let Some(a) = &archived {
        let (last, hash) = (a.last_seq.unwrap_or(0), a.last_hash());
        if last != prefix.seq || (last > 0 && hash != Some(prefix.prev_hash.as_str())) {
            bail!(
                "the export starts after record {} (hash {}), but the archive ends at record {last} (hash {})",
                prefix.seq,
                prefix.prev_hash,
                hash.unwrap_or("none")
            );
        }
    } else if prefix.seq > 0 {
        eprintln!(
            "the export starts at record {}: records before it are archived (check them with --archive DIR)",
            prefix.seq + 1
        );
    }
    let mut check = OfflineCheck::new(files, key, &prefix)?;
    let records = dir.join("records.jsonl");
    let file =
        std::fs::File::open(&records).with_context(|| format!("{}: missing", records.display()))?;
    for line in std::io::BufReader::new(file).lines() {
        check.line(&line?)?;
    }
    let report = check.finish()?;
    if Some(report.records) != manifest["records"].as_u64() {
        bail!(
            "records.jsonl holds {} records, manifest.json says {}",
            report.records,
            manifest["records"]
        );
    }
    print_json(&report)
}

fn verify_proof(file: &std::path::Path, key: &str) -> anyhow::Result<()> {
    let key = read_key(key)?;
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    let format = value.get("format").and_then(|f| f.as_str()).unwrap_or("");
    let verified = match format {
        INCLUSION_FORMAT => {
            let bundle: InclusionBundle = serde_json::from_value(value)
                .with_context(|| format!("{}: not an inclusion bundle", file.display()))?;
            proof::verify_inclusion(&bundle, key.trim())
        }
        CONSISTENCY_FORMAT => {
            let bundle: ConsistencyBundle = serde_json::from_value(value)
                .with_context(|| format!("{}: not a consistency bundle", file.display()))?;
            proof::verify_consistency(&bundle, key.trim())
        }
        other => Err(proof::ProofError::Format(other.to_string())),
    };
    match verified {
        Ok(v) => print_json(&v),
        Err(e) => bail!("{}: {e}", file.display()),
    }
}
