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

/// Every column an insert names after `chain` (bound once per batch as `$1::uuid`), with
/// the type its parameters are bound as, in the order of the insert. Every insert below
/// is spelled from this list.
const ROW: [(&str, &str); 22] = [
    ("seq", "bigint"),
    ("chain_seq", "bigint"),
    ("at", "timestamptz"),
    ("request_id", "text"),
    ("identity_id", "uuid"),
    ("identity", "text"),
    ("adapter", "text"),
    ("dialect", "text"),
    ("tool", "text"),
    ("source_id", "text"),
    ("action", "text"),
    ("statement", "text"),
    ("fingerprint", "text"),
    ("decision", "jsonb"),
    ("outcome", "text"),
    ("row_count", "bigint"),
    ("duration_us", "bigint"),
    ("cache_hit", "boolean"),
    ("approval_id", "uuid"),
    ("prev_hash", "bytea"),
    ("hash", "bytea"),
    ("statement_sha256", "text"),
];

/// The parameters of one record's row, after the chain.
pub(super) const ROW_WIDTH: usize = ROW.len();

/// The sizes a batch of two to [`ROWS_UP_TO`] records is bound as: plain rows, one
/// statement per size, the rows past the batch's records bound as NULLs and left out by the
/// statement. A few sizes keep what each control connection holds prepared small (a
/// 32-row insert is about 300 kB of the backend's memory).
const ROW_SIZES: [usize; 5] = [2, 4, 8, 16, ROWS_UP_TO];

/// The largest batch bound as rows. Measured against one array per column for a batch of
/// 6 (`unnest` into rows: the arrays parsed, the rows materialized): 43–48 against 70–79 µs
/// of the control backend per record; for 17 records in 32 rows, 35 against 40
/// (BENCHMARKS.md, "The audit commit, seventh step").
pub(super) const ROWS_UP_TO: usize = 32;

/// The column list every insert names.
fn columns() -> String {
    std::iter::once("chain")
        .chain(ROW.iter().map(|(name, _)| *name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `columns` of [`ROW`] bound as parameters from `$first` on, each cast as `cast` spells
/// its type, joined by commas.
fn params(columns: &[(&str, &str)], first: usize, cast: impl Fn(&str) -> String) -> String {
    columns
        .iter()
        .enumerate()
        .map(|(i, (_, ty))| format!("${}::{}", first + i, cast(ty)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The inserts into one table (a partition, or the partitioned parent).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Inserts {
    /// A batch of one — every batch at low load — binds plain values: the server parses no
    /// arrays and runs no function scan (BENCHMARKS.md, "The audit commit against its
    /// floor": 278–339 µs as arrays, 137–181 µs as values).
    one: String,
    /// A batch of one whose seq the insert takes itself (`nextval` inside the statement,
    /// returned): one round trip for the whole append.
    one_fresh: String,
    /// Batches of two to [`ROWS_UP_TO`], one insert per size in [`ROW_SIZES`]: the chain
    /// `$1` in each row, the rest of row `r` from `$2 + 22 r`; a row whose seq is NULL
    /// (padding) is left out.
    rows: Vec<String>,
    /// A batch of more is one statement whatever its size: one array per column, unnested
    /// into rows, so the server binds and executes once per batch.
    many: String,
}

impl Inserts {
    fn for_table(table: &str) -> Self {
        let cols = columns();
        let plain = |ty: &str| ty.to_string();
        let row = |r: usize| format!("($1::uuid, {})", params(&ROW, 2 + ROW_WIDTH * r, plain));
        let rows = ROW_SIZES
            .iter()
            .map(|&n| {
                let values = (0..n).map(row).collect::<Vec<_>>().join(", ");
                format!(
                    "INSERT INTO {table} ({cols}) SELECT v.* FROM (VALUES {values}) AS v ({cols}) \
                     WHERE v.seq IS NOT NULL"
                )
            })
            .collect();
        Inserts {
            one: format!("INSERT INTO {table} ({cols}) VALUES {}", row(0)),
            one_fresh: format!(
                "INSERT INTO {table} ({cols}) VALUES ($1::uuid, nextval('audit_records_seq'), {}) \
                 RETURNING seq",
                params(&ROW[1..], 2, plain)
            ),
            rows,
            many: format!(
                "INSERT INTO {table} ({cols}) SELECT $1::uuid, u.* FROM unnest({}) AS u",
                params(&ROW, 2, |ty| format!("{ty}[]"))
            ),
        }
    }

    /// Every one of them.
    fn all(&self) -> impl Iterator<Item = &str> {
        [&self.one, &self.one_fresh, &self.many]
            .into_iter()
            .chain(&self.rows)
            .map(String::as_str)
    }
}

/// The inserts through the partitioned parent.
static PARENT: std::sync::LazyLock<Inserts> =
    std::sync::LazyLock::new(|| Inserts::for_table("audit_records"));

/// A place in [`ROW_SIZES`], and in the lists of inserts built from it: made only by
/// [`Insert::of`], so always one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RowSize(usize);

/// Which insert a batch needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Insert {
    /// A batch of one at a seq taken first.
    One,
    /// A batch of one that takes its own seq.
    OneFresh,
    /// A batch of two to [`ROWS_UP_TO`] at seqs taken first, bound as rows: as many as the
    /// size of [`ROW_SIZES`] at this place (the batch's records, then NULLs).
    Rows(RowSize),
    /// A larger batch at seqs taken first, bound as one array per column.
    Many,
}

impl Insert {
    /// The insert for a batch of `records` at seqs taken first.
    pub(super) fn of(records: usize) -> Self {
        if records == 1 {
            return Insert::One;
        }
        match ROW_SIZES.iter().position(|&n| records <= n) {
            Some(at) => Insert::Rows(RowSize(at)),
            None => Insert::Many,
        }
    }

    /// The rows a batch is bound as, for an insert of rows.
    pub(super) fn rows(self) -> Option<usize> {
        match self {
            Insert::Rows(RowSize(at)) => Some(ROW_SIZES[at]),
            _ => None,
        }
    }

    /// The insert through the partitioned parent.
    pub(super) fn parent(self) -> &'static str {
        self.among(&PARENT)
    }

    /// The insert into `partition` if there is one, else through the parent.
    pub(super) fn sql_for(self, partition: Option<&Partition>) -> &str {
        partition.map_or(self.parent(), |p| self.among(&p.inserts))
    }

    fn among(self, inserts: &Inserts) -> &str {
        match self {
            Insert::One => &inserts.one,
            Insert::OneFresh => &inserts.one_fresh,
            Insert::Rows(RowSize(at)) => &inserts.rows[at],
            Insert::Many => &inserts.many,
        }
    }
}

/// One partition: the seqs `[lower, upper)` it holds, and its inserts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Partition {
    lower: i64,
    upper: i64,
    inserts: Inserts,
}

impl Partition {
    fn new(lower: i64, upper: i64, name: &str) -> Self {
        let table = format!("\"{}\"", name.replace('"', "\"\""));
        Partition {
            lower,
            upper,
            inserts: Inserts::for_table(&table),
        }
    }

    /// Every insert into this partition: what a connection may hold prepared for it.
    pub(super) fn inserts(&self) -> impl Iterator<Item = &str> {
        self.inserts.all()
    }

    pub(super) fn holds(&self, seqs: &[i64]) -> bool {
        match (seqs.first(), seqs.last()) {
            (Some(first), Some(last)) => self.lower <= *first && *last < self.upper,
            _ => false,
        }
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
            .inserts
            .one
            .starts_with("INSERT INTO \"audit_records_1000001\" (chain, seq,"));
        let kinds = [Insert::One, Insert::OneFresh, Insert::Many]
            .into_iter()
            .chain((2..=ROWS_UP_TO).map(Insert::of));
        for kind in kinds {
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
        assert_eq!(p.inserts().count(), 3 + ROW_SIZES.len());
    }

    #[test]
    fn a_batch_is_bound_as_the_fewest_rows_that_hold_it_up_to_the_largest_size() {
        assert_eq!(Insert::of(1), Insert::One);
        let rows = |n| Insert::of(n).rows();
        let cases = [
            (2, 2),
            (3, 4),
            (4, 4),
            (5, 8),
            (9, 16),
            (16, 16),
            (17, 32),
            (32, 32),
        ];
        for (records, bound) in cases {
            assert_eq!(rows(records), Some(bound), "{records} records");
        }
        assert_eq!(Insert::of(ROWS_UP_TO + 1), Insert::Many);
        assert_eq!(Insert::of(256), Insert::Many);
    }

    #[test]
    fn every_row_binds_what_a_batch_of_one_binds() {
        let one = Insert::One.parent();
        let values = |sql: &str| sql[sql.find("VALUES (").map_or(0, |i| i + 8)..].to_string();
        for n in ROW_SIZES {
            let sql = Insert::of(n).parent();
            // The first row is a batch of one's, parameter for parameter.
            let first = values(sql);
            let row_end = first.find(')').unwrap_or(first.len());
            assert_eq!(&first[..row_end], &values(one)[..values(one).len() - 1]);
            // Every row binds the chain, then 22 parameters of its own, none twice.
            assert_eq!(sql.matches("$1::uuid").count(), n, "{sql}");
            let last = 1 + ROW_WIDTH * n;
            assert!(sql.contains(&format!("${last}::text)")), "{sql}");
            assert!(!sql.contains(&format!("${}::", last + 1)), "{sql}");
            assert!(sql.ends_with("WHERE v.seq IS NOT NULL"), "{sql}");
        }
    }
}
