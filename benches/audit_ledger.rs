//! What the audit log's checkpoints and proofs cost on the gateway's CPU, against the
//! baseline every record already pays: its chain hash (`chain_hash`, SHA-256 over the
//! previous hash, the sequence number and the canonical JSON of the record).
//!
//! - `chain_hash/one_record`: the baseline.
//! - `chain_hash/agent_read`: the same for an agent's governed read as the load bench's records
//!   carry it (its decision holds the steps, the rule and the replay basis: ~550 bytes).
//! - `tree/append_1000_records`: the stored hashes of 1,000 new records (what a checkpoint
//!   adds to `audit_tree_hashes` per 1,000 records), per call.
//! - `tree/root_of_100k` and `tree/inclusion_proof_100k`: reading a root or a proof out of the
//!   stored hashes of a 100,000-record tree (the database fetch is not included).
//! - `checkpoint/sign` and `proof/verify_inclusion`: signing a checkpoint, and everything an
//!   auditor's verifier does for one record (signature, chain hash, audit path).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::Utc;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use interlock::ledger::proof::{self, InclusionBundle, INCLUSION_FORMAT};
use interlock::ledger::tree::{self, Hash, Known};
use interlock::ledger::CheckpointKey;
use interlock_actors::audit::record::{chain_hash, FOUNDING_CHAIN};
use interlock_actors::audit::{AuditRecord, RecordOutcome};

fn record(i: u64) -> AuditRecord {
    AuditRecord {
        at: Utc::now(),
        request_id: format!("7f1c2d3e-0000-4000-8000-{i:012}"),
        identity_id: None,
        identity: Some("demo-agent".into()),
        adapter: "mcp".into(),
        dialect: Some("2026-07-28".into()),
        tool: "interlock_query".into(),
        source_id: Some("shop".into()),
        action: Some("read".into()),
        statement: Some(format!(
            "SELECT id, name, country FROM public.customers WHERE id = {i} LIMIT 1001"
        )),
        fingerprint: Some("0123456789abcdef0123456789abcdef".into()),
        decision: serde_json::json!({"verdict": "allowed", "steps": ["identity", "policy", "execution"]}),
        outcome: RecordOutcome::Ok,
        row_count: Some(1),
        duration_us: 412,
        cache_hit: false,
        approval_id: None,
        statement_sha256: None,
    }
    .normalized()
}

/// The decision of an agent's point read, as the gateway stored one under the load bench.
fn agent_read_decision() -> serde_json::Value {
    serde_json::json!({
        "class": "read",
        "rules": ["role analyst: allow read public.customers"],
        "steps": ["identity", "audit_gate", "source", "source_role", "policy", "rate_limit",
                  "write_safety", "breaker", "execution", "redaction", "audit"],
        "replay": {
            "facts": {
                "kind": "agent", "time": "2026-12-07T00:08:43.846882746Z",
                "tool": "interlock_query", "zone": "UTC", "source": "shop", "adapter": "mcp",
                "dialect": "2025-11-25", "identity": "demo-agent", "credential": "api_key",
                "source_max_rows": 1000
            },
            "effect": {"verdict": "read"},
            "params": 0
        },
        "verdict": "allow"
    })
}

/// A tree of `n` leaves built as the control database builds it, in batches of 5,000.
fn build(n: u64) -> (Known, Vec<Hash>) {
    let mut stored = Known::new();
    let mut leaves = Vec::new();
    let mut size = 0;
    while size < n {
        let grow = (n - size).min(5_000);
        let new: Vec<Hash> = (size..size + grow)
            .map(|i| tree::leaf(&i.to_be_bytes()))
            .collect();
        let fetched: Known = tree::needed_for_append(size, grow)
            .into_iter()
            .map(|i| (i, stored[&i]))
            .collect();
        stored.extend(tree::append(size, &new, &fetched).unwrap());
        leaves.extend(new);
        size += grow;
    }
    (stored, leaves)
}

fn pick(stored: &Known, indexes: Vec<u64>) -> Known {
    indexes.into_iter().map(|i| (i, stored[&i])).collect()
}

fn bench(c: &mut Criterion) {
    let one = record(42);
    c.bench_function("chain_hash/one_record", |b| {
        b.iter(|| chain_hash(black_box(&[7; 32]), FOUNDING_CHAIN, 42, black_box(&one)));
    });

    let mut agent = record(43);
    agent.decision = agent_read_decision();
    c.bench_function("chain_hash/agent_read", |b| {
        b.iter(|| chain_hash(black_box(&[7; 32]), FOUNDING_CHAIN, 43, black_box(&agent)));
    });

    let (stored, _) = build(100_000);
    let new: Vec<Hash> = (0..1_000u64)
        .map(|i| tree::leaf(&i.to_le_bytes()))
        .collect();
    let fetched = pick(&stored, tree::needed_for_append(100_000, 1_000));
    c.bench_function("tree/append_1000_records", |b| {
        b.iter(|| tree::append(100_000, black_box(&new), &fetched).unwrap());
    });
    let for_root = pick(&stored, tree::needed_for_root(100_000));
    c.bench_function("tree/root_of_100k", |b| {
        b.iter(|| tree::root(100_000, black_box(&for_root)).unwrap());
    });
    let for_proof = pick(&stored, tree::needed_for_inclusion(100_000, 31_337));
    c.bench_function("tree/inclusion_proof_100k", |b| {
        b.iter(|| tree::inclusion(100_000, 31_337, black_box(&for_proof)).unwrap());
    });

    let key =
        CheckpointKey::parse(&CheckpointKey::generate("bench.interlock/audit").unwrap()).unwrap();
    let root = tree::root(100_000, &for_root).unwrap();
    c.bench_function("checkpoint/sign", |b| {
        b.iter(|| key.sign(100_000, black_box(root)).unwrap());
    });

    // One real record at leaf 31,336 of the bench tree is not possible without its chain, so
    // the bundle proves a one-record log: the verifier's work is the same per step.
    let hash = chain_hash(&[0; 32], FOUNDING_CHAIN, 1, &one);
    let leaf = tree::leaf(&hash);
    let mut single = Known::new();
    single.extend(tree::append(0, &[leaf], &Known::new()).unwrap());
    let bundle = InclusionBundle {
        format: INCLUSION_FORMAT.to_string(),
        seq: 1,
        place: Default::default(),
        record: one.clone(),
        prev_hash: hex::encode([0u8; 32]),
        hash: hex::encode(hash),
        proof: proof::encode(&tree::inclusion(1, 0, &single).unwrap()),
        checkpoint: key.sign(1, tree::root(1, &single).unwrap()).unwrap().note,
        timestamp: None,
    };
    proof::verify_inclusion(&bundle, key.verifier_key()).unwrap();
    c.bench_function("proof/verify_inclusion", |b| {
        b.iter(|| proof::verify_inclusion(black_box(&bundle), key.verifier_key()).unwrap());
    });
    println!(
        "stored hashes for 100,000 records: {} ({:.2} per record, 32 bytes each + index)",
        stored.len(),
        stored.len() as f64 / 100_000.0
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
