//! Signed checkpoints of the audit log and the proofs an outsider checks with the public
//! key alone, on a real control database through the product's own writer: every record
//! of a log grown in uneven steps is proven against every checkpoint that holds it, every
//! checkpoint is proven to extend every earlier one, and each way of tampering with a proof,
//! a record, a checkpoint or the log itself is refused by name. The CLI verifies offline.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use chrono::Utc;
use interlock::control::ledger;
use interlock::ledger::note::CheckpointError;
use interlock::ledger::proof::{self, ProofError};
use interlock::ledger::CheckpointKey;
use interlock_actors::audit::{AuditConfig, AuditHandle, AuditRecord};
use interlock_actors::events::EventBus;
use interlock_actors::supervise::{Supervision, SupervisionConfig};

fn record(i: usize) -> AuditRecord {
    common::records::record(i, Utc::now())
}

/// A fresh control database and the product's own audit writer on it.
struct Log {
    db: String,
    pool: interlock::control::ControlPool,
    writer: AuditHandle,
    /// Kept for as long as the writer runs.
    _supervision: Supervision,
}

async fn log() -> Log {
    let db = common::fresh_control_db().await;
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).unwrap();
    let supervision = Supervision::new(SupervisionConfig::default(), EventBus::default());
    let writer = AuditHandle::start(pool.clone(), AuditConfig::default(), &supervision);
    Log {
        db,
        pool,
        writer,
        _supervision: supervision,
    }
}

fn new_key() -> CheckpointKey {
    CheckpointKey::parse(&CheckpointKey::generate("interlock.test/audit").unwrap()).unwrap()
}

/// A fresh signer key named `name`, written to `dir/file`; its path.
fn key_file(dir: &std::path::Path, file: &str, name: &str) -> std::path::PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, CheckpointKey::generate(name).unwrap()).unwrap();
    path
}

#[actix_rt::test]
async fn every_record_is_proven_in_every_checkpoint_and_tampering_is_named() {
    let Log {
        db,
        pool,
        writer,
        _supervision,
    } = log().await;
    let key = new_key();
    let vkey = key.verifier_key().to_string();

    assert!(
        ledger::checkpoint(&pool, &key).await.unwrap().is_none(),
        "an empty log has no checkpoint"
    );
    let mut sizes = Vec::new();
    let mut appended = 0;
    for step in [1, 1, 2, 3, 5, 8, 13, 1, 30] {
        for _ in 0..step {
            appended += 1;
            writer.append(record(appended)).await.unwrap();
        }
        let c = ledger::checkpoint(&pool, &key).await.unwrap().unwrap();
        assert!(c.new);
        assert_eq!(c.checkpoint.tree_size, appended as i64);
        // A second request without new records returns the same checkpoint, not a new one.
        let again = ledger::checkpoint(&pool, &key).await.unwrap().unwrap();
        assert!(!again.new);
        assert_eq!(again.checkpoint.note, c.checkpoint.note);
        sizes.push(appended as u64);
    }

    // Every record against every checkpoint that holds it.
    let mut proven = 0;
    for &size in &sizes {
        for seq in 1..=size as i64 {
            let bundle = ledger::prove_record(&pool, seq, Some(size)).await.unwrap();
            let v = proof::verify_inclusion(&bundle, &vkey)
                .unwrap_or_else(|e| panic!("record {seq} in {size}: {e}"));
            assert_eq!((v.tree_size, v.subject), (size, seq as u64));
            proven += 1;
        }
    }
    assert_eq!(proven, sizes.iter().sum::<u64>());
    // Every checkpoint extends every earlier one.
    for (i, &old) in sizes.iter().enumerate() {
        for &new in &sizes[i..] {
            let bundle = ledger::prove_consistency(&pool, old, new).await.unwrap();
            proof::verify_consistency(&bundle, &vkey)
                .unwrap_or_else(|e| panic!("{old} → {new}: {e}"));
        }
    }

    // Tampering with an inclusion bundle: each case names its check.
    let good = ledger::prove_record(&pool, 20, None).await.unwrap();
    assert_eq!(
        proof::verify_inclusion(&good, &vkey).unwrap().tree_size,
        20,
        "the first checkpoint that covers record 20"
    );
    let other = new_key();
    let other_checkpoint = other
        .sign(20, interlock::ledger::Hash([0; 32]))
        .unwrap()
        .note;
    type Tamper = fn(&mut proof::InclusionBundle, &str);
    type Expect = fn(&ProofError) -> bool;
    let cases: Vec<(&str, Tamper, Expect)> = vec![
        (
            "a proof hash flipped",
            |b, _| b.proof[0] = flip(&b.proof[0]),
            |e| matches!(e, ProofError::Inclusion { seq: 20 }),
        ),
        (
            "the proof truncated",
            |b, _| {
                b.proof.pop();
            },
            |e| matches!(e, ProofError::Inclusion { seq: 20 }),
        ),
        (
            "a proof hash not base64",
            |b, _| b.proof[1] = "!!".into(),
            |e| matches!(e, ProofError::ProofHash { index: 1 }),
        ),
        (
            "the record altered",
            |b, _| b.record.row_count = Some(999),
            |e| matches!(e, ProofError::RecordAltered { seq: 20 }),
        ),
        (
            "another record's place in the log",
            |b, _| b.seq = 19,
            |e| matches!(e, ProofError::Inclusion { seq: 19 }),
        ),
        (
            "another place in its chain",
            |b, _| b.place.chain_seq = b.place.chain_seq.map(|n| n - 1),
            |e| matches!(e, ProofError::RecordAltered { seq: 20 }),
        ),
        (
            "another chain",
            |b, _| b.place.chain = Some(uuid::Uuid::new_v4()),
            |e| matches!(e, ProofError::RecordAltered { seq: 20 }),
        ),
        (
            "the hash not hex",
            |b, _| b.hash = "zz".into(),
            |e| matches!(e, ProofError::Hash { field: "hash", .. }),
        ),
        (
            "the checkpoint's size altered",
            |b, _| b.checkpoint = b.checkpoint.replacen("\n20\n", "\n21\n", 1),
            |e| {
                matches!(
                    e,
                    ProofError::Checkpoint {
                        error: CheckpointError::BadSignature(_),
                        ..
                    }
                )
            },
        ),
        (
            "a checkpoint by another key",
            |b, other| b.checkpoint = other.to_string(),
            |e| {
                matches!(
                    e,
                    ProofError::Checkpoint {
                        error: CheckpointError::NotSignedByKey(_),
                        ..
                    }
                )
            },
        ),
        (
            "an unknown format",
            |b, _| b.format = "x/9".into(),
            |e| matches!(e, ProofError::Format(_)),
        ),
    ];
    for (name, tamper, expected) in cases {
        let mut b = good.clone();
        tamper(&mut b, &other_checkpoint);
        match proof::verify_inclusion(&b, &vkey) {
            Err(e) if expected(&e) => {}
            other => panic!("{name}: {other:?}"),
        }
    }
    // A record beyond the checkpoint.
    let mut beyond = ledger::prove_record(&pool, 4, Some(4)).await.unwrap();
    let later = ledger::prove_record(&pool, 5, Some(7)).await.unwrap();
    beyond.seq = 5;
    beyond.place = later.place;
    beyond.record = later.record;
    beyond.prev_hash = later.prev_hash;
    beyond.hash = later.hash;
    assert!(matches!(
        proof::verify_inclusion(&beyond, &vkey),
        Err(ProofError::OutsideTree { seq: 5, size: 4 })
    ));

    // Tampering with a consistency bundle.
    let good = ledger::prove_consistency(&pool, 7, 33).await.unwrap();
    let mut b = good.clone();
    b.proof[0] = flip(&b.proof[0]);
    assert!(matches!(
        proof::verify_consistency(&b, &vkey),
        Err(ProofError::Consistency { old: 7, new: 33 })
    ));
    let mut b = good.clone();
    std::mem::swap(&mut b.old_checkpoint, &mut b.new_checkpoint);
    assert!(matches!(
        proof::verify_consistency(&b, &vkey),
        Err(ProofError::Order { old: 33, new: 7 })
    ));

    // Someone who can write the control database rewrites record 5 and rebuilds the whole
    // tree: the new checkpoint verifies on its own, but it no longer extends the one an
    // outsider kept.
    let kept = ledger::at_size(&pool, 7).await.unwrap().unwrap();
    let admin = common::admin(&db).await;
    admin
        .batch_execute(
            "UPDATE audit_records SET hash = sha256(hash) WHERE seq = 5;
             DELETE FROM audit_tree_hashes; UPDATE audit_tree SET size = 0;
             DELETE FROM audit_checkpoints;",
        )
        .await
        .unwrap();
    let rewritten = ledger::checkpoint(&pool, &key)
        .await
        .unwrap()
        .unwrap()
        .checkpoint;
    let new = rewritten.tree_size.unsigned_abs();
    let forged = proof::ConsistencyBundle {
        format: proof::CONSISTENCY_FORMAT.to_string(),
        old_checkpoint: kept.note,
        new_checkpoint: rewritten.note,
        proof: proof::encode(&ledger::consistency(&pool, new, 7).await.unwrap()),
    };
    assert!(matches!(
        proof::verify_consistency(&forged, &vkey),
        Err(ProofError::Consistency { old: 7, .. })
    ));
}

fn flip(b64: &str) -> String {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let mut bytes = engine.decode(b64).unwrap();
    bytes[0] ^= 1;
    engine.encode(bytes)
}

#[actix_rt::test]
async fn the_cli_proves_and_verifies_offline_and_the_gateway_publishes_its_key() {
    let db = common::fresh_control_db().await;
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_interlock");
    let run = |args: &[&str], config: Option<&std::path::Path>| {
        let mut cmd = std::process::Command::new(bin);
        cmd.args(args).env_remove("INTERLOCK_CONFIG");
        if let Some(config) = config {
            cmd.arg("--config").arg(config);
        }
        let out = cmd.output().expect("run");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let key_file = dir.path().join("checkpoint.key");
    let (ok, vkey, err) = run(
        &[
            "audit",
            "keygen",
            "--name",
            "interlock.test/cli",
            "--out",
            key_file.to_str().unwrap(),
        ],
        None,
    );
    assert!(ok, "{err}");
    let vkey = vkey.trim().to_string();
    assert!(vkey.starts_with("interlock.test/cli+"), "{vkey}");
    // An existing key is never overwritten.
    let (ok, _, _) = run(
        &[
            "audit",
            "keygen",
            "--name",
            "x",
            "--out",
            key_file.to_str().unwrap(),
        ],
        None,
    );
    assert!(!ok);

    let extra = format!(
        "[audit]\ncheckpoint_key_file = \"{}\"\ncheckpoint_interval_secs = 0\n",
        key_file.display()
    );
    let config = common::control_config_file(dir.path(), &db, &extra);
    let (ok, _, _) = run(&["migrate"], Some(&config));
    assert!(ok);
    let (ok, _, err) = run(&["audit", "checkpoint"], Some(&config));
    assert!(!ok && err.contains("empty"), "{err}");

    // The gateway audits its calls; its verifier key is public.
    let mut settings = common::settings_for(&db);
    settings.audit.checkpoint_key_file = key_file.display().to_string();
    settings.audit.checkpoint_interval_secs = 0;
    let gateway = common::TestGateway::start(settings);
    let http = reqwest::Client::new();
    let published = http
        .get(gateway.url("/audit/checkpoint-key"))
        .send()
        .await
        .unwrap();
    assert_eq!(published.status(), 200);
    assert_eq!(published.text().await.unwrap().trim(), vkey);
    gateway.stop().await;
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).unwrap();
    let supervision = Supervision::new(SupervisionConfig::default(), EventBus::default());
    let writer = AuditHandle::start(pool, AuditConfig::default(), &supervision);
    for i in 1..=3 {
        writer.append(record(i)).await.unwrap();
    }

    let (ok, note, err) = run(&["audit", "checkpoint"], Some(&config));
    assert!(ok, "{err}");
    assert!(note.starts_with("interlock.test/cli\n"), "{note}");
    let (ok, bundle, err) = run(&["audit", "prove", "--seq", "2"], Some(&config));
    assert!(ok, "{err}");
    // The same record found by its request id; an unknown one is named.
    let (ok, by_request, err) = run(&["audit", "prove", "--request-id", "req-2"], Some(&config));
    assert!(ok, "{err}");
    assert_eq!(by_request, bundle);
    let (ok, _, err) = run(&["audit", "prove", "--request-id", "nope"], Some(&config));
    assert!(
        !ok && err.contains("no audit record of request nope"),
        "{err}"
    );
    let bundle_file = dir.path().join("proof.json");
    std::fs::write(&bundle_file, &bundle).unwrap();
    let (ok, out, err) = run(
        &[
            "audit",
            "verify-proof",
            bundle_file.to_str().unwrap(),
            "--key",
            &vkey,
        ],
        None,
    );
    assert!(ok, "{err}");
    assert!(out.contains("\"subject\": 2"), "{out}");

    // Tampered: non-zero, and the message names the file and the check.
    let tampered = bundle.replacen("\"seq\": 2", "\"seq\": 3", 1);
    std::fs::write(&bundle_file, tampered).unwrap();
    let (ok, _, err) = run(
        &[
            "audit",
            "verify-proof",
            bundle_file.to_str().unwrap(),
            "--key",
            &vkey,
        ],
        None,
    );
    assert!(!ok);
    assert!(
        err.contains("proof.json") && err.contains("record 3"),
        "{err}"
    );
    // The whole log exported, then checked with no database and no configuration.
    let export = dir.path().join("export");
    let (ok, out, err) = run(
        &["audit", "export", export.to_str().unwrap()],
        Some(&config),
    );
    assert!(ok, "{err}");
    assert!(out.starts_with("3 records and 1 checkpoints"), "{out}");
    let verify = |d: &std::path::Path| {
        run(
            &[
                "audit",
                "verify",
                "--offline",
                d.to_str().unwrap(),
                "--key",
                &vkey,
            ],
            None,
        )
    };
    let (ok, out, err) = verify(&export);
    assert!(ok, "{err}");
    assert!(
        out.contains("\"records\": 3") && out.contains("\"checkpoints\": 1"),
        "{out}"
    );

    // Each tampering of a copy of the export is refused, naming the file, line or record.
    let other = new_key()
        .sign(3, interlock::ledger::Hash([1; 32]))
        .unwrap()
        .note;
    fn lines(d: &std::path::Path) -> Vec<String> {
        std::fs::read_to_string(d.join("records.jsonl"))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }
    fn write_lines(d: &std::path::Path, l: Vec<String>) {
        std::fs::write(d.join("records.jsonl"), l.join("\n") + "\n").unwrap();
    }
    type Tamper = Box<dyn Fn(&std::path::Path)>;
    let cases: Vec<(&str, Tamper, &str)> = vec![
        (
            "a record altered",
            Box::new(|d| {
                let mut l = lines(d);
                l[1] = l[1].replacen("\"duration_us\":1", "\"duration_us\":2", 1);
                write_lines(d, l);
            }),
            "line 2, record 2",
        ),
        (
            "a record removed",
            Box::new(|d| {
                let mut l = lines(d);
                l.remove(1);
                write_lines(d, l);
            }),
            "expected record 2 next",
        ),
        (
            "the last record removed",
            Box::new(|d| {
                let mut l = lines(d);
                l.pop();
                write_lines(d, l);
            }),
            "checkpoint-3.note: the checkpoint covers 3 records, but the export holds only 2",
        ),
        (
            "a checkpoint by another key",
            Box::new(move |d| std::fs::write(d.join("checkpoint-3.note"), &other).unwrap()),
            "checkpoint-3.note: the checkpoint carries no signature by the key",
        ),
        (
            "a listed checkpoint missing",
            Box::new(|d| std::fs::remove_file(d.join("checkpoint-3.note")).unwrap()),
            "checkpoint-3.note: listed in manifest.json but missing",
        ),
        (
            "not JSON",
            Box::new(|d| {
                let mut l = lines(d);
                l[0].push('x');
                write_lines(d, l);
            }),
            "records.jsonl line 1: not a record",
        ),
    ];
    for (name, tamper, expected) in cases {
        let copy = dir.path().join(format!("copy-{}", name.replace(' ', "-")));
        std::fs::create_dir_all(&copy).unwrap();
        for entry in std::fs::read_dir(&export).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
        tamper(&copy);
        let (ok, _, err) = verify(&copy);
        assert!(!ok, "{name}: accepted");
        assert!(err.contains(expected), "{name}: {err}");
    }
}

#[actix_rt::test]
async fn checkpoints_are_timestamped_by_a_real_tsa_and_verify_with_openssl() {
    use interlock::anchoring::{self, TimestampAuthority};
    use interlock::ledger::timestamp::TimestampError;
    use std::sync::atomic::Ordering;

    let tsa = common::tsa::Tsa::start();
    let Log {
        db: _,
        pool,
        writer,
        _supervision,
    } = log().await;
    let key = new_key();
    let authority = TimestampAuthority::new(&tsa.url, std::time::Duration::from_secs(5))
        .unwrap()
        .unwrap();
    for i in 1..=5 {
        writer.append(record(i)).await.unwrap();
    }

    // The TSA is down: the checkpoint is made all the same, its timestamp pending with why.
    tsa.down.store(true, Ordering::SeqCst);
    let anchors = anchoring::Anchors {
        tsa: Some(authority.clone()),
        witness: None,
    };
    let first = anchoring::checkpoint_now(&pool, &key, &anchors, None)
        .await
        .unwrap()
        .unwrap();
    assert!(first.timestamp.is_none());
    assert!(
        first
            .timestamp_error
            .as_deref()
            .unwrap_or("")
            .contains("503"),
        "{first:?}"
    );

    // Back up: the pending checkpoint and a new one are both timestamped.
    tsa.down.store(false, Ordering::SeqCst);
    for i in 6..=8 {
        writer.append(record(i)).await.unwrap();
    }
    let second = anchoring::checkpoint_now(&pool, &key, &anchors, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.tree_size, 8);
    let all = ledger::all(&pool).await.unwrap();
    assert!(
        all.iter()
            .all(|c| c.timestamp.is_some() && c.timestamp_error.is_none()),
        "{all:?}"
    );

    // OpenSSL verifies each kept response against the note, with the TSA's CA.
    let dir = tempfile::tempdir().unwrap();
    for c in &all {
        use base64::Engine as _;
        let note = dir.path().join(format!("{}.note", c.tree_size));
        let tsr = dir.path().join(format!("{}.tsr", c.tree_size));
        std::fs::write(&note, &c.note).unwrap();
        let der = base64::engine::general_purpose::STANDARD
            .decode(c.timestamp.as_ref().unwrap())
            .unwrap();
        std::fs::write(&tsr, der).unwrap();
        let verify = |data: &std::path::Path| {
            std::process::Command::new("openssl")
                .args(["ts", "-verify", "-data"])
                .arg(data)
                .arg("-in")
                .arg(&tsr)
                .arg("-CAfile")
                .arg(&tsa.ca)
                .arg("-untrusted")
                .arg(&tsa.cert)
                .output()
                .unwrap()
        };
        let out = verify(&note);
        assert!(
            out.status.success()
                && String::from_utf8_lossy(&out.stdout).contains("Verification: OK"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let altered = dir.path().join("altered.note");
        std::fs::write(&altered, c.note.replacen('\n', "\n\n", 1)).unwrap();
        assert!(
            !verify(&altered).status.success(),
            "an altered note must not verify"
        );
    }

    // A proof bundle carries its checkpoint's timestamp; one for another checkpoint is named.
    let mut bundle = ledger::prove_record(&pool, 3, Some(5)).await.unwrap();
    assert!(bundle.timestamp.is_some());
    proof::verify_inclusion(&bundle, key.verifier_key()).unwrap();
    bundle.timestamp = all[1].timestamp.clone();
    assert!(matches!(
        proof::verify_inclusion(&bundle, key.verifier_key()),
        Err(ProofError::Timestamp(TimestampError::OtherHash))
    ));

    // Offline, a timestamp file that belongs to another checkpoint is named.
    use base64::Engine as _;
    use interlock::ledger::offline::{CheckpointFile, OfflineCheck, OfflineError, Prefix};
    let der = |c: &ledger::StoredCheckpoint| {
        base64::engine::general_purpose::STANDARD
            .decode(c.timestamp.as_ref().unwrap())
            .unwrap()
    };
    let swapped = vec![CheckpointFile {
        name: "checkpoint-5.note".into(),
        note: all[0].note.clone(),
        timestamp: Some(("checkpoint-5.tsr".into(), der(&all[1]))),
    }];
    match OfflineCheck::new(swapped, key.verifier_key(), &Prefix::none()) {
        Err(OfflineError::Timestamp {
            file,
            error: TimestampError::OtherHash,
        }) => {
            assert_eq!(file, "checkpoint-5.tsr");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a timestamp of another checkpoint was accepted"),
    }
}

#[tokio::test]
async fn the_gateway_signs_checkpoints_on_its_own_schedule_and_readyz_shows_them() {
    let keys = tempfile::tempdir().unwrap();
    let key_file = key_file(keys.path(), "checkpoint.key", "interlock.test/schedule");
    let path = key_file.display().to_string();
    let env = common::env::demo_env_with(
        |s| {
            s.audit.checkpoint_key_file = path;
            s.audit.checkpoint_interval_secs = 1;
        },
        |_| {},
    )
    .await;
    // One governed call: a record for the schedule to sign.
    env.agent_query(serde_json::json!({"source_id": "shop", "sql": "SELECT 1 AS x"}))
        .await;
    let http = reqwest::Client::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let (listed, ready) = loop {
        let listed: serde_json::Value = http
            .get(env.gateway.url("/admin/audit/checkpoints"))
            .bearer_auth(&env.operator_key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let ready: serde_json::Value = http
            .get(env.gateway.url("/readyz"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let signed = listed["checkpoints"]
            .as_array()
            .is_some_and(|c| !c.is_empty());
        if (signed && ready["audit_anchoring"]["last_checkpoint"].is_i64())
            || std::time::Instant::now() > deadline
        {
            break (listed, ready);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let latest = &listed["checkpoints"][0];
    assert!(
        latest.is_object(),
        "no scheduled checkpoint: {listed} {ready}"
    );
    let vkey = listed["verifier_key"].as_str().unwrap();
    let read = interlock::ledger::note::verify(latest["note"].as_str().unwrap(), vkey).unwrap();
    assert_eq!(Some(read.size), latest["tree_size"].as_u64());
    assert_eq!(ready["status"], "ready", "{ready}");
    assert!(
        ready["audit_anchoring"]["last_checkpoint"].as_i64() >= Some(1),
        "{ready}"
    );
    assert_eq!(
        ready["audit_anchoring"]["timestamp_pending"], false,
        "{ready}"
    );
}

/// The control database's owner deletes the tail of a checkpointed log and the tree behind
/// it (no key, no hash computed): the default check names the checkpoint that no longer
/// holds, and the tree is never grown, voided or signed again over the cut.
#[actix_rt::test]
async fn cutting_the_log_below_a_checkpoint_fails_verify_and_is_never_signed_over() {
    let Log {
        db,
        pool,
        writer,
        _supervision,
    } = log().await;
    let key = new_key();
    let vkey = key.verifier_key().to_string();
    let other = new_key();
    for i in 1..=15 {
        writer.append(record(i)).await.unwrap();
        if i == 10 || i == 15 {
            ledger::checkpoint(&pool, &key).await.unwrap().unwrap();
        }
    }
    use interlock::control::signed_heads;
    // Before: both checkpoints hold, with their signatures (and without a key, their roots).
    for (given, signatures) in [
        (Some(vkey.as_str()), 2),
        (None, 0),
        (Some(other.verifier_key()), 0),
    ] {
        let held = signed_heads::verify(&pool, given).await.unwrap();
        assert!(held.ok, "{held:?}");
        assert_eq!((held.checked, held.signatures_checked), (2, signatures));
    }

    let owner = common::admin(&db).await;
    let first_break = || async {
        let report = signed_heads::verify(&pool, Some(&vkey)).await.unwrap();
        assert!(!report.ok || report.first_break.is_none());
        report.first_break.map(|b| (b.tree_size, b.reason))
    };
    // A checkpoint's row given another (valid) note: the note no longer states its size.
    let note: String = owner
        .query_one(
            "SELECT note FROM audit_checkpoints WHERE tree_size = 15",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    owner
        .batch_execute("UPDATE audit_checkpoints SET note = (SELECT note FROM audit_checkpoints WHERE tree_size = 10) WHERE tree_size = 15")
        .await
        .unwrap();
    let (at, why) = first_break().await.expect("a swapped note is named");
    assert!(at == 15 && why.contains("not the 15"), "{at}: {why}");
    owner
        .execute(
            "UPDATE audit_checkpoints SET note = $1 WHERE tree_size = 15",
            &[&note],
        )
        .await
        .unwrap();
    assert_eq!(first_break().await, None);
    // The leaf of record 15 rewritten in the tree: the root at 15 is not the signed one.
    let leaf = i64::try_from(interlock::ledger::tree::leaf_index(14)).unwrap();
    let kept: Vec<u8> = owner
        .query_one(
            "SELECT hash FROM audit_tree_hashes WHERE idx = $1",
            &[&leaf],
        )
        .await
        .unwrap()
        .get(0);
    owner
        .execute(
            "UPDATE audit_tree_hashes SET hash = sha256(hash) WHERE idx = $1",
            &[&leaf],
        )
        .await
        .unwrap();
    let (at, why) = first_break().await.expect("a rewritten tree is named");
    assert!(at == 15 && why.contains("rewritten"), "{at}: {why}");
    owner
        .execute(
            "UPDATE audit_tree_hashes SET hash = $2 WHERE idx = $1",
            &[&leaf, &kept],
        )
        .await
        .unwrap();
    assert_eq!(first_break().await, None);
    // The review's case: the tail deleted, the tree emptied.
    owner
        .batch_execute(
            "DELETE FROM audit_records WHERE seq > 12; DELETE FROM audit_tree_hashes; UPDATE audit_tree SET size = 0",
        )
        .await
        .unwrap();
    let (at, why) = first_break().await.expect("a cut log is named");
    assert!(at == 10 && why.contains("removed"), "{at}: {why}");
    // The cut tree is not grown again: no seq at or below a checkpoint is voided, nothing
    // is signed over the rewritten log.
    let refused = ledger::checkpoint(&pool, &key)
        .await
        .err()
        .map(|e| e.to_string());
    assert!(
        refused.as_deref().is_some_and(|e| e.contains("cut back")),
        "{refused:?}"
    );
    let voids: i64 = owner
        .query_one("SELECT count(*) FROM audit_records WHERE void", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(voids, 0);
    let signed: i64 = owner
        .query_one("SELECT count(*) FROM audit_checkpoints", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(signed, 2);
}

/// RUNTIME.md: a checkpoint key that does not parse stops the gateway at start, naming the
/// file; so does one that cannot be read. The gateway never serves without the key it was
/// configured to sign with.
#[tokio::test]
async fn a_checkpoint_key_that_does_not_parse_stops_the_gateway_naming_the_file() {
    let control_db = common::fresh_control_db().await;
    let dir = tempfile::tempdir().expect("dir");
    let garbled = dir.path().join("garbled.key");
    std::fs::write(&garbled, "PRIVATE+KEY+not-a-key+00000000+AAAA\n").expect("write");
    let missing = dir.path().join("missing.key");
    for key in [&garbled, &missing] {
        let port = interlock::pgcluster::free_port().expect("port");
        let config = common::control_config_file(
            dir.path(),
            &control_db,
            &format!(
                "[server]\nlisten = \"127.0.0.1:{port}\"\n[audit]\ncheckpoint_key_file = \"{}\"\n",
                key.display()
            ),
        );
        let out = tokio::task::spawn_blocking(move || {
            let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_interlock"))
                .arg("--config")
                .arg(&config)
                .arg("serve")
                .env_remove("INTERLOCK_CONFIG")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            loop {
                if let Some(status) = child.try_wait().expect("wait") {
                    let mut stderr = String::new();
                    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr)
                        .expect("stderr");
                    return (
                        status,
                        stderr,
                        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
                    );
                }
                if std::time::Instant::now() > deadline {
                    let _ = child.kill();
                    panic!("the gateway kept running with an unusable checkpoint key");
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
        .await
        .expect("join");
        let (status, stderr, listening) = out;
        assert!(!status.success(), "{key:?}: exit {status}");
        assert!(!listening, "{key:?}: nothing listens after the refusal");
        assert!(
            stderr.contains("audit.checkpoint_key_file")
                && stderr.contains(&key.display().to_string()),
            "{key:?}: the error names the setting and the file: {stderr}"
        );
    }
}

/// `interlock audit prove --approval-id`: a real approval's records (the call that queued
/// it, its decision, its execution) are found by the approval's id; one record is proven
/// directly, several are listed by seq, each of which proves and verifies offline.
#[tokio::test]
async fn prove_by_approval_id_finds_an_approval_s_records() {
    let env = common::env::demo_env().await;
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_interlock");
    let key_file = dir.path().join("checkpoint.key");
    let config = common::control_config_file(
        dir.path(),
        &env.control_db,
        &format!(
            "[audit]\ncheckpoint_key_file = \"{}\"\ncheckpoint_interval_secs = 0\n",
            key_file.display()
        ),
    );
    let run = |args: &[&str], with_config: bool| {
        let mut cmd = std::process::Command::new(bin);
        cmd.args(args).env_remove("INTERLOCK_CONFIG");
        if with_config {
            cmd.arg("--config").arg(&config);
        }
        let out = cmd.output().expect("run");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, vkey, err) = run(
        &[
            "audit",
            "keygen",
            "--name",
            "interlock.test/approvals",
            "--out",
            key_file.to_str().unwrap(),
        ],
        false,
    );
    assert!(ok, "{err}");
    let gw = &env.gateway;
    let pending = common::approvals::queue(
        gw,
        &env.agent_key,
        "shop",
        "UPDATE public.orders SET status = 'held' WHERE id = 8",
    )
    .await;
    let executed = common::approvals::queue(
        gw,
        &env.agent_key,
        "shop",
        "UPDATE public.orders SET status = 'paid' WHERE id = 9",
    )
    .await;
    common::approvals::approve(gw, &env.approver_key, &executed, serde_json::json!({})).await;
    common::approvals::wait(gw, &env.approver_key, &executed, |a| {
        a["state"] == "executed"
    })
    .await;
    let (ok, _, err) = run(&["audit", "checkpoint"], true);
    assert!(ok, "{err}");

    // One record (the call that queued it): proven directly, the same bundle as by its seq.
    let (ok, bundle, err) = run(&["audit", "prove", "--approval-id", &pending], true);
    assert!(ok, "{err}");
    let proof: serde_json::Value = serde_json::from_str(&bundle).expect("bundle");
    let seq = proof["seq"].as_i64().expect("seq");
    let (ok, by_seq, _) = run(&["audit", "prove", "--seq", &seq.to_string()], true);
    assert!(ok);
    assert_eq!(bundle, by_seq);
    assert_eq!(proof["record"]["approval_id"], serde_json::json!(pending));

    // Several: listed by seq; each proves and verifies with the key alone.
    let (ok, _, err) = run(&["audit", "prove", "--approval-id", &executed], true);
    assert!(!ok, "several records are not one proof");
    let listed: Vec<String> = err
        .split("(seq ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("the seqs are listed")
        .split(", ")
        .map(str::to_string)
        .collect();
    assert!(listed.len() >= 2, "queued, decided, executed: {err}");
    for seq in listed {
        let (ok, bundle, err) = run(&["audit", "prove", "--seq", &seq], true);
        assert!(ok, "{err}");
        let proof: serde_json::Value = serde_json::from_str(&bundle).expect("bundle");
        assert_eq!(
            proof["record"]["approval_id"],
            serde_json::json!(executed),
            "{bundle}"
        );
        let file = dir.path().join(format!("proof-{seq}.json"));
        std::fs::write(&file, &bundle).unwrap();
        let (ok, _, err) = run(
            &[
                "audit",
                "verify-proof",
                file.to_str().unwrap(),
                "--key",
                vkey.trim(),
            ],
            false,
        );
        assert!(ok, "{err}");
    }
    let unknown = uuid::Uuid::new_v4().to_string();
    let (ok, _, err) = run(&["audit", "prove", "--approval-id", &unknown], true);
    assert!(
        !ok && err.contains(&format!("no audit record of approval {unknown}")),
        "{err}"
    );
}

/// RUNTIME.md: replicas that tick together sign the same tree head once; the checkpoints
/// they store together are one chain of sizes, each written to their shared witness file
/// once, none counted as a failure.
#[tokio::test]
async fn two_replicas_ticking_together_sign_each_tree_head_once_and_witness_it_once() {
    let keys = tempfile::tempdir().unwrap();
    let key_file = key_file(keys.path(), "checkpoint.key", "interlock.test/fleet");
    let witness = keys.path().join("witness.jsonl");
    let (path, witness_path) = (
        key_file.display().to_string(),
        witness.display().to_string(),
    );
    let env = common::env::demo_env_with(
        |s| {
            s.audit.checkpoint_key_file = path;
            // The demo's own gateway never ticks: the two replicas below do.
            s.audit.checkpoint_interval_secs = 0;
            s.audit.witness_file = witness_path;
        },
        |_| {},
    )
    .await;
    let mut ticking = env.gateway.settings.clone();
    ticking.audit.checkpoint_interval_secs = 1;
    let a = common::TestGateway::start(ticking.clone());
    let b = common::TestGateway::start(ticking);
    let calls = |gw: &common::TestGateway, n: u32| {
        let base = gw.url("");
        let key = env.agent_key.clone();
        async move {
            for i in 0..n {
                common::mcp::call(
                    &base,
                    Some(&key),
                    common::mcp::MODERN,
                    "interlock_query",
                    serde_json::json!({"source_id": "shop", "sql": format!("SELECT {i} AS x")}),
                )
                .await;
                tokio::time::sleep(std::time::Duration::from_millis(60)).await;
            }
        }
    };
    futures_util::future::join(calls(&a, 60), calls(&b, 60)).await;
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    let db = env.pool.get().await.unwrap();
    let stored: Vec<(i64, String)> = db
        .query(
            "SELECT tree_size, note FROM audit_checkpoints ORDER BY tree_size",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert!(
        stored.len() >= 3,
        "the replicas signed as they ticked: {stored:?}"
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&witness)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut witnessed: Vec<i64> = lines
        .iter()
        .map(|l| l["tree_size"].as_i64().unwrap())
        .collect();
    let total = witnessed.len();
    witnessed.dedup();
    assert_eq!(
        total,
        witnessed.len(),
        "a tree head witnessed twice: {lines:?}"
    );
    assert_eq!(
        witnessed,
        stored.iter().map(|s| s.0).collect::<Vec<_>>(),
        "every stored checkpoint witnessed once, in order"
    );
    for gw in [&a, &b] {
        let metrics = common::http::get_text(&gw.url("/metrics"), &env.operator_key).await;
        assert!(
            !metrics.lines().any(
                |l| l.starts_with("interlock_audit_checkpoint_failures_total")
                    && !l.ends_with(" 0")
            ),
            "a replica counted a failure: {metrics}"
        );
    }
    a.stop().await;
    b.stop().await;
}

/// RUNTIME.md: rotating the checkpoint key. A replica started with a new key signs the next
/// checkpoints under the new key's name; the old verifier key still verifies the old
/// checkpoints, the new one the new, and neither the other's.
#[tokio::test]
async fn a_rotated_checkpoint_key_still_verifies_the_checkpoints_it_signed() {
    let keys = tempfile::tempdir().unwrap();
    let old_file = key_file(keys.path(), "old.key", "interlock.test/rotate-old");
    let new_file = key_file(keys.path(), "new.key", "interlock.test/rotate-new");
    let old = CheckpointKey::parse(&std::fs::read_to_string(&old_file).unwrap()).unwrap();
    let new = CheckpointKey::parse(&std::fs::read_to_string(&new_file).unwrap()).unwrap();
    let path = old_file.display().to_string();
    let env = common::env::demo_env_with(
        |s| {
            s.audit.checkpoint_key_file = path;
            s.audit.checkpoint_interval_secs = 0;
        },
        |_| {},
    )
    .await;
    let sign = |gw: &common::TestGateway| {
        let (base, agent, operator) = (gw.url(""), env.agent_key.clone(), env.operator_key.clone());
        async move {
            common::mcp::call(
                &base,
                Some(&agent),
                common::mcp::MODERN,
                "interlock_query",
                serde_json::json!({"source_id": "shop", "sql": "SELECT 1 AS x"}),
            )
            .await;
            let signed: serde_json::Value = reqwest::Client::new()
                .post(format!("{base}/admin/audit/checkpoints"))
                .bearer_auth(&operator)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            signed["note"]
                .as_str()
                .unwrap_or_else(|| panic!("{signed}"))
                .to_string()
        }
    };
    let before = sign(&env.gateway).await;
    let mut settings = env.gateway.settings.clone();
    settings.audit.checkpoint_key_file = new_file.display().to_string();
    let rotated = common::TestGateway::start(settings);
    let after = sign(&rotated).await;
    assert!(
        before.starts_with("interlock.test/rotate-old\n"),
        "{before}"
    );
    assert!(after.starts_with("interlock.test/rotate-new\n"), "{after}");
    let verify = |note: &str, key: &CheckpointKey| {
        interlock::ledger::note::verify(note, key.verifier_key()).map(|c| c.size)
    };
    let (old_size, new_size) = (
        verify(&before, &old).unwrap(),
        verify(&after, &new).unwrap(),
    );
    assert!(new_size > old_size, "{old_size} then {new_size}");
    assert!(
        verify(&before, &new).is_err(),
        "the new key verifies only its own"
    );
    assert!(
        verify(&after, &old).is_err(),
        "the old key verifies only its own"
    );
    rotated.stop().await;
}
