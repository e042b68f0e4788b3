//! Retention by archiving, on a real control database through the product's own writer and
//! CLI: the log is partitioned by seq range (the writer creates partitions as it runs past
//! the last one, also two writers at once), closed partitions are archived to segment files
//! and dropped only after their files verified, the live log and the archive verify across
//! the seam (online, and offline with the public key alone, also for an export made after
//! archiving), each way of tampering with an archive is named, an archiving that fails keeps
//! its partition, and the gateway archives on its own schedule.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::records::record;

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use chrono::Utc;
use interlock::ledger::CheckpointKey;
use interlock_actors::audit::{AuditConfig, AuditHandle};
use interlock_actors::events::EventBus;
use interlock_actors::supervise::{Supervision, SupervisionConfig};

fn writer(pool: &interlock::control::ControlPool, span: i64) -> AuditHandle {
    let supervision = Supervision::new(SupervisionConfig::default(), EventBus::default());
    AuditHandle::start(
        pool.clone(),
        AuditConfig {
            partition_records: span,
            ..AuditConfig::default()
        },
        &supervision,
    )
}

/// Runs the CLI; (success, stdout, stderr).
fn run(args: &[&str], config: &Path) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_interlock"))
        .args(args)
        .arg("--config")
        .arg(config)
        .env_remove("INTERLOCK_CONFIG")
        .output()
        .expect("run");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn keygen(dir: &Path) -> (PathBuf, String) {
    let path = dir.join("checkpoint.key");
    let skey = CheckpointKey::generate("interlock.test/retention").unwrap();
    std::fs::write(&path, format!("{skey}\n")).unwrap();
    let vkey = CheckpointKey::parse(&skey)
        .unwrap()
        .verifier_key()
        .to_string();
    (path, vkey)
}

async fn tables(pool: &interlock::control::ControlPool) -> Vec<String> {
    let client = pool.get().await.unwrap();
    client
        .query(
            "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = 'audit_records'::regclass ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

fn gz_lines(path: &Path) -> Vec<String> {
    let file = std::fs::File::open(path).unwrap();
    std::io::BufReader::new(flate2::read::GzDecoder::new(file))
        .lines()
        .map(Result::unwrap)
        .collect()
}

fn write_gz_lines(path: &Path, lines: &[String]) {
    let mut gz = flate2::write::GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::fast(),
    );
    for l in lines {
        writeln!(gz, "{l}").unwrap();
    }
    gz.finish().unwrap();
}

fn segment(dir: &Path, first: i64, last: i64) -> PathBuf {
    dir.join(interlock::ledger::segment::file_name(first, last))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[actix_rt::test]
async fn closed_partitions_are_archived_verified_and_dropped_and_tampering_is_named() {
    let db = common::fresh_control_db().await;
    let dir = tempfile::tempdir().unwrap();
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).unwrap();
    // Two writers on one chain run past partition ends together: each creates what it needs.
    let (a, b) = (writer(&pool, 40), writer(&pool, 40));
    let appends = (1..=130).map(|i| {
        let w = if i % 2 == 0 { a.clone() } else { b.clone() };
        async move { w.append(record(i, Utc::now())).await.unwrap() }
    });
    let mut seqs = futures_util::future::join_all(appends).await;
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=130).collect::<Vec<i64>>(), "one gap-free chain");
    assert_eq!(
        tables(&pool).await,
        [
            "audit_records_1",
            "audit_records_121",
            "audit_records_41",
            "audit_records_81"
        ]
    );

    let (key_file, vkey) = keygen(dir.path());
    let archive = dir.path().join("archive");
    let config = common::control_config_file(
        dir.path(),
        &db,
        &format!(
            "[audit]\ncheckpoint_key_file = \"{}\"\ncheckpoint_interval_secs = 0\npartition_records = 40\n",
            key_file.display()
        ),
    );
    let no_key = common::control_config_file(dir.path(), &db, "");
    let (ok, _, err) = run(&["audit", "archive", "--dir", "x"], &no_key);
    assert!(!ok && err.contains("no checkpoint key"), "{err}");

    // An archiving that fails keeps its partition: the second segment cannot be created.
    std::fs::create_dir_all(archive.join(format!(
        "{}.partial",
        segment(&archive, 41, 80).file_name().unwrap().to_string_lossy()
    )))
    .unwrap();
    let archive_str = archive.to_str().unwrap();
    let (ok, _, err) = run(&["audit", "archive", "--dir", archive_str], &config);
    assert!(!ok && err.contains(".partial"), "{err}");
    assert_eq!(
        tables(&pool).await,
        ["audit_records_121", "audit_records_41", "audit_records_81"],
        "the first partition was archived before the failure, the second stays"
    );
    std::fs::remove_dir(archive.join(format!(
        "{}.partial",
        segment(&archive, 41, 80).file_name().unwrap().to_string_lossy()
    )))
    .unwrap();

    let (ok, out, err) = run(&["audit", "archive", "--dir", archive_str], &config);
    assert!(ok, "{err}");
    let done: serde_json::Value = serde_json::from_str(&out).unwrap();
    let archived: Vec<(i64, i64)> = done["archived"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["first_seq"].as_i64().unwrap(),
                s["last_seq"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        archived,
        [(41, 80), (81, 120)],
        "the head's partition stays live"
    );
    assert_eq!(tables(&pool).await, ["audit_records_121"]);
    for (first, last) in [(1, 40), (41, 80), (81, 120)] {
        assert!(segment(&archive, first, last).exists());
    }

    // The log goes on after archiving.
    for i in 131..=135 {
        a.append(record(i, Utc::now())).await.unwrap();
    }
    let (ok, out, err) = run(&["audit", "verify"], &config);
    assert!(ok, "{err}");
    let live: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (live["first_seq"].as_i64(), live["records"].as_u64()),
        (Some(121), Some(15))
    );
    let (ok, out, err) = run(&["audit", "verify", "--archive", archive_str], &config);
    assert!(ok, "{err}");
    let both: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(both["archive"]["segments"].as_array().unwrap().len(), 3);
    assert_eq!(both["archive"]["last_seq"], 120);
    let (ok, out, err) = run(
        &["audit", "verify", "--offline", archive_str, "--key", &vkey],
        &no_key,
    );
    assert!(ok, "{err}");
    assert!(out.contains("\"first_seq\": 1"), "{out}");

    // An export after archiving starts at the first live record and continues the archive.
    let (ok, _, err) = run(&["audit", "checkpoint"], &config);
    assert!(ok, "{err}");
    let export = dir.path().join("export");
    let (ok, _, err) = run(&["audit", "export", export.to_str().unwrap()], &config);
    assert!(ok, "{err}");
    let (ok, out, err) = run(
        &[
            "audit",
            "verify",
            "--offline",
            export.to_str().unwrap(),
            "--key",
            &vkey,
        ],
        &no_key,
    );
    assert!(
        ok && err.contains("records before it are archived"),
        "{err}"
    );
    assert!(out.contains("\"first_seq\": 121"), "{out}");
    let (ok, _, err) = run(
        &[
            "audit",
            "verify",
            "--offline",
            export.to_str().unwrap(),
            "--key",
            &vkey,
            "--archive",
            archive_str,
        ],
        &no_key,
    );
    assert!(ok, "{err}");

    // Each tampering with a copy of the archive is refused, naming file, record and check.
    let other = CheckpointKey::parse(&CheckpointKey::generate("interlock.test/retention").unwrap())
        .unwrap()
        .sign(80, interlock::ledger::Hash([1; 32]))
        .unwrap()
        .note;
    let middle = |d: &Path| segment(d, 41, 80);
    type Tamper = Box<dyn Fn(&Path)>;
    let edit = |f: fn(&mut Vec<String>)| -> Tamper {
        Box::new(move |d: &Path| {
            let mut l = gz_lines(&middle(d));
            f(&mut l);
            write_gz_lines(&middle(d), &l);
        })
    };
    let cases: Vec<(&str, Tamper, &str)> = vec![
        (
            "a record altered",
            edit(|l| l[5] = l[5].replacen("\"duration_us\":1", "\"duration_us\":2", 1)),
            "line 6, record 45: hash does not match",
        ),
        (
            "two records swapped",
            edit(|l| l.swap(3, 4)),
            "expected record 43 next, found 44",
        ),
        (
            "the last record removed",
            edit(|l| {
                l.pop();
            }),
            "holds records 41..79 but its header says 41..80",
        ),
        (
            "a record added",
            edit(|l| {
                let extra = l[40].replacen("\"seq\":80", "\"seq\":81", 1);
                l.push(extra);
            }),
            "holds records 41..81 but its header says 41..80",
        ),
        (
            "the checkpoint signed by another key",
            Box::new(move |d: &Path| {
                let mut l = gz_lines(&middle(d));
                let mut header: serde_json::Value = serde_json::from_str(&l[0]).unwrap();
                header["checkpoint"] = other.clone().into();
                l[0] = header.to_string();
                write_gz_lines(&middle(d), &l);
            }),
            "its checkpoint: the checkpoint carries no signature by the key",
        ),
        (
            "the prefix's frontier altered",
            edit(|l| {
                let mut header: serde_json::Value = serde_json::from_str(&l[0]).unwrap();
                header["prefix"]["frontier"][0] = hex::encode([7u8; 32]).into();
                l[0] = header.to_string();
            }),
            "do not make the root its checkpoint signs",
        ),
        (
            "a segment missing",
            Box::new(move |d: &Path| std::fs::remove_file(middle(d)).unwrap()),
            "records 41..80 are missing",
        ),
        (
            "the first segment missing",
            Box::new(move |d: &Path| std::fs::remove_file(segment(d, 1, 40)).unwrap()),
            "the archive starts at record 41: records 1..40 are missing",
        ),
        (
            "not gzip",
            Box::new(move |d: &Path| std::fs::write(middle(d), b"plain text\n").unwrap()),
            "segment-0000000000000000041-0000000000000000080.jsonl.gz",
        ),
    ];
    for (name, tamper, expected) in cases {
        let copy = dir.path().join(format!("copy-{}", name.replace(' ', "-")));
        copy_dir(&archive, &copy);
        tamper(&copy);
        let (ok, _, err) = run(
            &[
                "audit",
                "verify",
                "--offline",
                copy.to_str().unwrap(),
                "--key",
                &vkey,
            ],
            &no_key,
        );
        assert!(!ok, "{name}: accepted offline");
        assert!(err.contains(expected), "{name}: {err}");
        let (ok, _, err) = run(
            &["audit", "verify", "--archive", copy.to_str().unwrap()],
            &config,
        );
        assert!(!ok, "{name}: accepted online");
        assert!(err.contains(expected), "{name}: {err}");
    }

    // A segment re-signed consistently by the log's own key (an insider with the key) but
    // not the file that was archived: the control database's SHA-256 names it online.
    let swapped = dir.path().join("copy-rewritten");
    copy_dir(&archive, &swapped);
    let l = gz_lines(&segment(&swapped, 81, 120));
    write_gz_lines(&segment(&swapped, 81, 120), &l);
    let (ok, _, err) = run(
        &["audit", "verify", "--archive", swapped.to_str().unwrap()],
        &config,
    );
    assert!(
        !ok && err.contains("is not the file that was archived"),
        "{err}"
    );

    // The proof of an archived record still comes from the stored tree; its record is in
    // the archive.
    let (ok, _, err) = run(&["audit", "prove", "--seq", "50"], &config);
    assert!(!ok && err.contains("archived"), "{err}");
    let (ok, _, err) = run(&["audit", "prove", "--from", "120", "--to", "135"], &config);
    assert!(ok, "{err}");
}

/// The maintenance round makes partitions ahead of the head, so the writer does not have to
/// on a call's path (it failed on every round once: its span was bound as the wrong integer
/// type, and the only symptom was a warning in the log).
#[actix_rt::test]
async fn the_maintenance_round_makes_partitions_ahead_of_the_head() {
    let db = common::fresh_control_db().await;
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).unwrap();
    let w = writer(&pool, 20);
    while w.append(record(0, Utc::now())).await.unwrap() < 15 {}
    assert_eq!(tables(&pool).await, ["audit_records_1"]);
    let made = interlock::control::partitions::ensure_ahead(&pool, 20).await;
    assert_eq!(
        made.unwrap(),
        1,
        "head 15 + half a span reaches into 21..41"
    );
    assert_eq!(tables(&pool).await, ["audit_records_1", "audit_records_21"]);
    assert_eq!(
        interlock::control::partitions::ensure_ahead(&pool, 20)
            .await
            .unwrap(),
        0,
        "nothing more while the head stays"
    );
    let refused = interlock::control::partitions::ensure_ahead(&pool, 0).await;
    assert!(refused.unwrap_err().to_string().contains("at least 1"));
}

/// How often this database ran each audit insert, by the table it names (pg_stat_statements).
async fn inserts_by_table(pool: &interlock::control::ControlPool) -> Vec<(String, i64)> {
    let client = pool.get().await.unwrap();
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .await
        .unwrap();
    client
        .query(
            "SELECT substring(query FROM '^INSERT INTO \"?([a-z_0-9]+)\"? \\(chain, seq'),
                    sum(calls)::bigint
               FROM pg_stat_statements
              WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND query LIKE 'INSERT INTO %(chain, seq%'
              GROUP BY 1 ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// The name of the partition that holds the log's head (the sequence's last value).
async fn head_partition(client: &tokio_postgres::Client) -> String {
    client
        .query_one(
            "SELECT name FROM audit_partitions, (SELECT last_value AS head FROM audit_records_seq) s
              WHERE lower <= s.head AND upper > s.head",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

/// The writer inserts straight into the partition that holds its batch (PostgreSQL routes
/// nothing), through the parent only for a batch that straddles two partitions or runs
/// past the last, and when the partition it addressed is gone.
#[actix_rt::test]
async fn the_writer_inserts_into_the_partition_that_holds_its_batch() {
    let db = common::fresh_control_db().await;
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).unwrap();
    let w = writer(&pool, 10);
    // One at a time across partition ends. The log has no partition yet: seq 1 goes in
    // through the parent once the writer has created audit_records_1; 2, through the
    // parent, teaches the writer its partition, and 3–10 go straight in. 11 is outside it
    // (refused by its bounds, the seq kept), and goes in again at 11 the same way as 1; 12
    // through the parent, 13–20 straight into audit_records_11; the same at 21 and 22,
    // and 23–25 straight into audit_records_21. Six through the parent, 19 straight in.
    for i in 0..25 {
        assert_eq!(w.append(record(i, Utc::now())).await.unwrap(), i as i64 + 1);
    }
    let by_table = inserts_by_table(&pool).await;
    let direct = |t: &[(String, i64)]| -> i64 {
        t.iter()
            .filter(|(t, _)| t.starts_with("audit_records_"))
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(direct(&by_table), 19, "{by_table:?}");
    // Bursts, whose batches may straddle partition ends, all land too.
    for burst in 0..3 {
        let appends = (0..9).map(|i| w.append(record(100 * burst + i, Utc::now())));
        for seq in futures_util::future::join_all(appends).await {
            seq.unwrap();
        }
    }
    // Every record is where its seq belongs (a partition's bounds are a CHECK), in order.
    let report = interlock::control::audit::verify(&pool).await.unwrap();
    assert!(report.ok, "{report:?}");
    assert_eq!(report.records, 52);

    // The partition it addressed is gone (renamed here; the log keeps routing to it): the
    // next batch goes through the parent and lands.
    let head = head_partition(&pool.get().await.unwrap()).await;
    let before = inserts_by_table(&pool).await;
    pool.get()
        .await
        .unwrap()
        .batch_execute(&format!("ALTER TABLE {head} RENAME TO audit_records_moved"))
        .await
        .unwrap();
    let seq = w.append(record(999, Utc::now())).await.unwrap();
    let after = inserts_by_table(&pool).await;
    let parent = |t: &[(String, i64)]| {
        t.iter()
            .find(|(n, _)| n == "audit_records")
            .map_or(0, |(_, n)| *n)
    };
    assert_eq!(
        parent(&after),
        parent(&before) + 1,
        "{before:?} → {after:?}"
    );
    let landed: i64 = pool
        .get()
        .await
        .unwrap()
        .query_one(
            "SELECT count(*) FROM audit_records_moved WHERE seq = $1",
            &[&seq],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(landed, 1);
    let report = interlock::control::audit::verify(&pool).await.unwrap();
    assert!(report.ok, "{report:?}");
}

/// A writer that moves on to the next partition closes the inserts it prepared for the one
/// it left: a connection keeps prepared only what the current partition takes, however
/// many partitions the log has filled (each insert of rows is a few hundred kB of the
/// control backend's memory).
#[actix_rt::test]
async fn a_connection_keeps_prepared_only_the_inserts_of_the_partition_in_use() {
    let db = common::fresh_control_db().await;
    let mut control = common::settings_for(&db).control;
    control.pool_size = 1;
    let pool = interlock::control::connect_pool(&control).unwrap();
    let w = writer(&pool, 10);
    // Batches of one and of many (rows and arrays alike): 114 records, a dozen partitions.
    for round in 0..7 {
        w.append(record(100_000 + round, Utc::now())).await.unwrap();
        let burst =
            (0..[3, 9, 40][round % 3]).map(|i| w.append(record(1000 * round + i, Utc::now())));
        for seq in futures_util::future::join_all(burst).await {
            seq.unwrap();
        }
    }
    let client = pool.get().await.unwrap();
    let head = head_partition(&client).await;
    let prepared: Vec<String> = client
        .query(
            "SELECT substring(statement FROM '^INSERT INTO \"(audit_records_[0-9]+)\"')
               FROM pg_prepared_statements WHERE statement LIKE 'INSERT INTO \"audit_records_%'",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(!prepared.is_empty());
    assert!(
        prepared.iter().all(|p| *p == head),
        "only {head}'s inserts: {prepared:?}"
    );
}

#[actix_rt::test]
async fn the_gateway_archives_on_its_own_schedule_and_lists_its_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let (key_file, vkey) = keygen(dir.path());
    let archive = dir.path().join("archive");
    let (key_path, archive_path) = (
        key_file.display().to_string(),
        archive.display().to_string(),
    );
    let env = common::env::demo_env_with(
        move |s| {
            s.audit.checkpoint_key_file = key_path;
            s.audit.checkpoint_interval_secs = 0;
            s.audit.partition_records = 20;
            s.audit.maintenance_interval_secs = 1;
            s.audit.archive_dir = archive_path;
            s.audit.retain_days = 2;
        },
        |_| {},
    )
    .await;
    let pool = env.pool.clone();
    // Records up to 45 three days old (beside whatever the demo's set-up audited), then
    // five of now: the partitions ending at 20 and 40 are past retention; the one holding
    // the head is not.
    let w = writer(&pool, 20);
    let old = Utc::now() - chrono::Duration::days(3);
    let mut i = 0;
    while w.append(record(i, old)).await.unwrap() < 45 {
        i += 1;
    }
    for j in 0..5 {
        w.append(record(1000 + j, Utc::now())).await.unwrap();
    }
    let archived = |t: &[String]| {
        !t.iter()
            .any(|n| n == "audit_records_1" || n == "audit_records_21")
            && t.iter().any(|n| n == "audit_records_41")
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !archived(&tables(&pool).await) {
        assert!(
            std::time::Instant::now() < deadline,
            "not archived: {:?}",
            tables(&pool).await
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let report = interlock::retention::files::check_archive(&archive, &vkey).unwrap();
    let ranges: Vec<(i64, i64)> = report
        .segments
        .iter()
        .map(|s| (s.summary.first_seq, s.summary.last_seq))
        .collect();
    assert_eq!(ranges, [(1, 20), (21, 40)]);
    let live = interlock::control::audit::verify(&pool).await.unwrap();
    assert!(live.ok && live.first_seq == 41, "{live:?}");
    // Operators see the partitions: two archived with their files, the rest live, and the
    // maintenance round made the next one ahead of the head.
    let listed: serde_json::Value = reqwest::Client::new()
        .get(env.gateway.url("/admin/audit/partitions"))
        .bearer_auth(&env.operator_key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["archived"], 2, "{listed}");
    let parts = listed["partitions"].as_array().unwrap();
    assert_eq!(
        parts[1]["archive_file"],
        interlock::ledger::segment::file_name(21, 40)
    );
    assert_eq!(parts[1]["archive_sha256"], report.segments[1].sha256);
    assert!(parts.iter().any(|p| p["lower"] == 41 && p["upper"] == 61));
}

#[actix_rt::test]
async fn a_witness_file_keeps_every_checkpoint_and_shows_a_rewritten_log() {
    let db = common::fresh_control_db().await;
    let dir = tempfile::tempdir().unwrap();
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).unwrap();
    let w = writer(&pool, 1000);
    let (key_file, _) = keygen(dir.path());
    let witness = dir.path().join("witness.jsonl");
    let config = |witness: &Path| {
        common::control_config_file(
            dir.path(),
            &db,
            &format!(
                "[audit]\ncheckpoint_key_file = \"{}\"\nwitness_file = \"{}\"\n",
                key_file.display(),
                witness.display()
            ),
        )
    };
    let good = config(&witness);
    // A witness that cannot be written delays only the witness, never the checkpoint.
    let unwritable = config(dir.path());
    for i in 1..=5 {
        w.append(record(i, Utc::now())).await.unwrap();
    }
    let (ok, _, err) = run(&["audit", "checkpoint"], &unwritable);
    assert!(ok, "{err}");
    assert!(!witness.exists());
    for i in 6..=8 {
        w.append(record(i, Utc::now())).await.unwrap();
    }
    // The next checkpoint catches the witness up: both checkpoints, oldest first.
    let (ok, _, err) = run(&["audit", "checkpoint"], &good);
    assert!(ok, "{err}");
    let kept: Vec<serde_json::Value> = std::fs::read_to_string(&witness)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sizes: Vec<i64> = kept
        .iter()
        .map(|k| k["tree_size"].as_i64().unwrap())
        .collect();
    assert_eq!(sizes, [5, 8]);
    let witness_arg = witness.to_str().unwrap();
    let (ok, out, err) = run(&["audit", "verify", "--witness", witness_arg], &good);
    assert!(ok, "{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["witness"]["checkpoints"], 2);
    assert_eq!(report["witness"]["latest"], 8);

    // What a witness shows, each on a copy of what it kept or of the log.
    let other = CheckpointKey::parse(&CheckpointKey::generate("interlock.test/retention").unwrap())
        .unwrap()
        .sign(8, interlock::ledger::Hash([1; 32]))
        .unwrap()
        .note;
    let forged = witness.with_file_name("forged.jsonl");
    let mut line = kept[1].clone();
    line["note"] = other.into();
    std::fs::write(&forged, format!("{}\n{line}\n", kept[0])).unwrap();
    let (ok, _, err) = run(
        &["audit", "verify", "--witness", forged.to_str().unwrap()],
        &good,
    );
    assert!(
        !ok && err.contains("line 2") && err.contains("no signature by the key"),
        "{err}"
    );

    let client = pool.get().await.unwrap();
    // A leaf of the tree that is not its record's (records rewritten after the checkpoint,
    // tree left alone): the chain alone still verifies, the records against the tree do not.
    client
        .batch_execute("UPDATE audit_tree_hashes SET hash = sha256(hash) WHERE idx = 0")
        .await
        .unwrap();
    let (ok, out, err) = run(&["audit", "verify"], &good);
    assert!(
        !ok && err.contains("record 1 is not the record the audit tree"),
        "{err}"
    );
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (
            report["ok"].as_bool(),
            report["chain_ok"].as_bool(),
            report["tree"]["ok"].as_bool(),
            report["checkpoints"]["ok"].as_bool()
        ),
        // The checkpoint's root comes from the stored tree's upper nodes, which still
        // hold: only the leaf check sees a leaf rewritten alone.
        (Some(false), Some(true), Some(false), Some(true))
    );
    // The log rewritten (its whole tree recomputed over other records): no root is the
    // signed one.
    client
        .batch_execute("UPDATE audit_tree_hashes SET hash = sha256(hash) WHERE idx <> 0")
        .await
        .unwrap();
    let (ok, _, err) = run(&["audit", "verify", "--witness", witness_arg], &good);
    assert!(
        !ok && err.contains("line 1") && err.contains("the log was rewritten"),
        "{err}"
    );
    // The log cut back: the witness saw more records than the tree holds.
    client
        .batch_execute("UPDATE audit_tree SET size = 4")
        .await
        .unwrap();
    let (ok, _, err) = run(&["audit", "verify", "--witness", witness_arg], &good);
    assert!(
        !ok && err.contains("of 5 records, but the log's tree holds only 4"),
        "{err}"
    );
}

/// RUNTIME.md: a fleet archives into one directory one partition at a time, under a
/// fleet-wide lock. Four archivers started together on one log: every closed partition is
/// archived exactly once (the reports of those that ran add up to each segment once), the
/// others stop at once saying another archiver holds the lock, and the log verifies.
#[actix_rt::test]
async fn archivers_started_together_archive_each_partition_once() {
    let db = common::fresh_control_db().await;
    let dir = tempfile::tempdir().unwrap();
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).unwrap();
    let w = writer(&pool, 20);
    for i in 1..=130 {
        w.append(record(i, Utc::now())).await.unwrap();
    }
    let (key_file, _) = keygen(dir.path());
    let archive = dir.path().join("archive");
    let config = common::control_config_file(
        dir.path(),
        &db,
        &format!(
            "[audit]\ncheckpoint_key_file = \"{}\"\ncheckpoint_interval_secs = 0\npartition_records = 20\n",
            key_file.display()
        ),
    );
    let archive_str = archive.to_str().unwrap().to_string();
    let runs = (0..4).map(|_| {
        let (config, archive) = (config.clone(), archive_str.clone());
        tokio::task::spawn_blocking(move || run(&["audit", "archive", "--dir", &archive], &config))
    });
    let (mut segments, mut held_off) = (Vec::new(), 0);
    for done in futures_util::future::join_all(runs).await {
        let (ok, out, err) = done.unwrap();
        if !ok {
            // The lock is taken, not waited for: a second archiver stops at once, unharmed.
            assert!(
                err.contains(
                    "another archiver is running (the lock is held); nothing was archived"
                ),
                "{err}"
            );
            held_off += 1;
            continue;
        }
        let report: serde_json::Value = serde_json::from_str(&out).unwrap();
        for s in report["archived"].as_array().unwrap() {
            segments.push((
                s["first_seq"].as_i64().unwrap(),
                s["last_seq"].as_i64().unwrap(),
            ));
        }
    }
    assert!(held_off < 4, "one archiver ran");
    segments.sort_unstable();
    let expected: Vec<(i64, i64)> = (0..6).map(|k| (k * 20 + 1, k * 20 + 20)).collect();
    assert_eq!(
        segments, expected,
        "each closed partition archived once, the head's kept live"
    );
    assert_eq!(tables(&pool).await, ["audit_records_121"]);
    let (ok, _, err) = run(&["audit", "verify"], &config);
    assert!(ok, "{err}");
}
