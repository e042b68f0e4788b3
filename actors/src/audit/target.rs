//! The partition of `audit_records` a writer inserts into.
//!
//! An INSERT through the partitioned parent routes every row at run time: PostgreSQL builds
//! the routing state and opens the target partition in each execution. On a copy of a large
//! log that cost a single-row insert about twice what the same insert addressed to the
//! partition costs (0.227 ms against 0.082–0.108 ms from pgbench, measured for issue 51);
//! on the logs of the benches here it is within noise (BENCHMARKS.md, "The audit commit,
//! third step"). The writer knows where its seqs go — `audit_partitions` lists every
//! partition's bounds, and partitions are created ahead of the head — so it addresses the
//! partition that holds its batch, and goes through the parent only when no single
//! partition does (a batch straddling two, seqs past the last one) or the partition it knew
//! is no longer there.

use tokio_postgres::error::SqlState;

/// The columns every insert names, in its order.
macro_rules! columns {
    () => {
        "chain, seq, chain_seq, at, request_id, identity_id, identity, adapter, dialect, tool, \
         source_id, action, statement, fingerprint, decision, outcome, row_count, duration_us, \
         cache_hit, approval_id, prev_hash, hash, statement_sha256"
    };
}

/// A batch of one — every batch at low load — binds plain values: the server parses no
/// arrays and runs no function scan (BENCHMARKS.md, "The audit commit against its floor":
/// 278–339 µs as arrays, 137–181 µs as values).
macro_rules! one {
    () => {
        concat!(
            " (",
            columns!(),
            ") VALUES ($1::uuid, $2::bigint, $3::bigint, $4::timestamptz, $5::text, $6::uuid, \
     $7::text, $8::text, $9::text, $10::text, $11::text, $12::text, $13::text, $14::text, \
     $15::jsonb, $16::text, $17::bigint, $18::bigint, $19::boolean, $20::uuid, $21::bytea, \
     $22::bytea, $23::text)"
        )
    };
}

/// A batch of one whose seq the insert takes itself (`nextval` inside the statement,
/// returned): one round trip for the whole append.
macro_rules! one_fresh {
    () => {
        concat!(
            " (",
            columns!(),
            ") VALUES ($1::uuid, nextval('audit_records_seq'), $2::bigint, $3::timestamptz, $4::text, \
     $5::uuid, $6::text, $7::text, $8::text, $9::text, $10::text, $11::text, $12::text, \
     $13::text, $14::jsonb, $15::text, $16::bigint, $17::bigint, $18::boolean, $19::uuid, \
     $20::bytea, $21::bytea, $22::text) RETURNING seq"
        )
    };
}

/// A batch of many is one statement whatever its size: one array per column, unnested into
/// rows, so the server binds and executes once per batch.
macro_rules! many {
    () => {
        concat!(
            " (",
            columns!(),
            ") SELECT $1::uuid, u.* FROM unnest($2::bigint[], $3::bigint[], $4::timestamptz[], \
     $5::text[], $6::uuid[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], \
     $12::text[], $13::text[], $14::text[], $15::jsonb[], $16::text[], $17::bigint[], \
     $18::bigint[], $19::boolean[], $20::uuid[], $21::bytea[], $22::bytea[], $23::text[]) AS u"
        )
    };
}

/// Which insert a batch needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Insert {
    /// A batch of one at a seq taken first.
    One,
    /// A batch of one that takes its own seq.
    OneFresh,
    /// A batch of many at seqs taken first.
    Many,
}

impl Insert {
    /// The insert for a batch of `records` at seqs taken first.
    pub(super) fn of(records: usize) -> Self {
        if records == 1 {
            Insert::One
        } else {
            Insert::Many
        }
    }

    /// The insert through the partitioned parent.
    pub(super) fn parent(self) -> &'static str {
        match self {
            Insert::One => concat!("INSERT INTO audit_records", one!()),
            Insert::OneFresh => concat!("INSERT INTO audit_records", one_fresh!()),
            Insert::Many => concat!("INSERT INTO audit_records", many!()),
        }
    }

    /// The insert into `partition` if there is one, else through the parent.
    pub(super) fn sql_for(self, partition: Option<&Partition>) -> &str {
        partition.map_or(self.parent(), |p| match self {
            Insert::One => &p.insert_one,
            Insert::OneFresh => &p.insert_one_fresh,
            Insert::Many => &p.insert_many,
        })
    }
}

/// One partition: the seqs `[lower, upper)` it holds, and its inserts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Partition {
    lower: i64,
    upper: i64,
    insert_one: String,
    insert_one_fresh: String,
    insert_many: String,
}

impl Partition {
    fn new(lower: i64, upper: i64, name: &str) -> Self {
        let table = format!("\"{}\"", name.replace('"', "\"\""));
        Partition {
            lower,
            upper,
            insert_one: format!("INSERT INTO {table}{}", one!()),
            insert_one_fresh: format!("INSERT INTO {table}{}", one_fresh!()),
            insert_many: format!("INSERT INTO {table}{}", many!()),
        }
    }

    pub(super) fn holds(&self, seqs: &[i64]) -> bool {
        match (seqs.first(), seqs.last()) {
            (Some(first), Some(last)) => self.lower <= *first && *last < self.upper,
            _ => false,
        }
    }
}

/// The partition a batch at `seqs` goes to (none: through the parent). `known` is the
/// partition the writer's last batch went to; another is looked up (one round trip) only
/// when it does not hold the seqs.
pub(super) async fn partition_for(
    client: &deadpool_postgres::Client,
    known: Option<Partition>,
    seqs: &[i64],
) -> Result<Option<Partition>, tokio_postgres::Error> {
    match known.filter(|p| p.holds(seqs)) {
        Some(p) => Ok(Some(p)),
        None => lookup(client, seqs).await,
    }
}

/// The live partition that holds every one of `seqs`, if one does.
pub(super) async fn lookup(
    client: &deadpool_postgres::Client,
    seqs: &[i64],
) -> Result<Option<Partition>, tokio_postgres::Error> {
    let (Some(first), Some(last)) = (seqs.first(), seqs.last()) else {
        return Ok(None);
    };
    let find = client
        .prepare_cached(
            "SELECT lower, upper, name FROM audit_partitions
              WHERE lower <= $1 AND upper > $1 AND archived_at IS NULL",
        )
        .await?;
    Ok(client
        .query_opt(&find, &[first])
        .await?
        .map(|r| Partition::new(r.get(0), r.get(1), r.get(2)))
        .filter(|p| *last < p.upper))
}

/// Whether an insert addressed to a partition failed because the partition is not where
/// the writer thought, or does not hold the row: gone (dropped, renamed), or the seq is
/// outside its bounds (its `audit_records_<lower>_bounds` CHECK, or the partition
/// constraint). The batch then goes through the parent or the partition that holds it.
pub(super) fn partition_gone(e: &tokio_postgres::Error) -> bool {
    e.as_db_error().is_some_and(|db| {
        *db.code() == SqlState::UNDEFINED_TABLE
            || (*db.code() == SqlState::CHECK_VIOLATION
                && (db.message().contains("violates partition constraint")
                    || db.constraint().is_some_and(|c| {
                        c.starts_with("audit_records_") && c.ends_with("_bounds")
                    })))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_holds_a_batch_only_whole() {
        let p = Partition::new(1_000_001, 2_000_001, "audit_records_1000001");
        assert!(p.holds(&[1_000_001]));
        assert!(p.holds(&[1_500_000, 2_000_000]));
        assert!(!p.holds(&[1_000_000]));
        assert!(!p.holds(&[2_000_000, 2_000_001]));
        assert!(!p.holds(&[]));
        assert!(p
            .insert_one
            .starts_with("INSERT INTO \"audit_records_1000001\" (chain, seq,"));
        for kind in [Insert::One, Insert::OneFresh, Insert::Many] {
            assert_eq!(
                kind.parent()
                    .replacen("audit_records", "\"audit_records_1000001\"", 1),
                kind.sql_for(Some(&p))
            );
            assert_eq!(kind.sql_for(None), kind.parent());
        }
        // The fresh insert binds every column but the seq, in the same order.
        let bound = |sql: &str| sql.matches("::").count();
        assert_eq!(
            bound(Insert::OneFresh.parent()),
            bound(Insert::One.parent()) - 1
        );
        assert_eq!(Insert::of(1), Insert::One);
        assert_eq!(Insert::of(2), Insert::Many);
    }
}
