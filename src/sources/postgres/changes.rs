//! The rows a write transaction changed, by table, as PostgreSQL itself counts them.
//!
//! A statement's command tag is not the effect of a write: a data-modifying CTE under a
//! `SELECT` reports the rows the `SELECT` returned, `EXPLAIN (ANALYSE)` of a write reports
//! none, and rows changed by triggers and foreign-key actions appear in no tag at all. The
//! backend's own statistics do: `pg_stat_xact_user_tables` counts every row the current
//! transaction inserted, updated or deleted, per table, whoever changed it (the statement,
//! a trigger, a cascading foreign key).
//!
//! Those counters are the backend's pending statistics, which PostgreSQL flushes only from
//! time to time (at most once a second, when the session is idle), so on a pooled
//! connection they can still hold earlier transactions' rows. The effect is therefore read
//! twice inside the write's transaction, before and after the statement, and is the
//! difference. A row counts once per change: an `UPDATE` that moves a row to another
//! partition counts as a delete and an insert, and rows changed in a subtransaction that a
//! function rolled back still count — the count never falls short of what was written.

use std::collections::BTreeMap;

use super::exec_error::{db_error, ExecError};

/// The counters, per table with any change so far in this transaction (toast tables and
/// system catalogs are not user tables, so a large value or a catalog lookup adds nothing).
const COUNTERS: &str = "SELECT format('%I.%I', schemaname, relname), \
     (n_tup_ins + n_tup_upd + n_tup_del)::bigint \
     FROM pg_catalog.pg_stat_xact_user_tables \
     WHERE n_tup_ins + n_tup_upd + n_tup_del > 0";

/// Rows changed per table (`schema.table`, quoted where PostgreSQL would quote it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes(pub BTreeMap<String, u64>);

impl Changes {
    /// The transaction's counters as they stand now.
    pub(super) async fn read(
        client: &impl tokio_postgres::GenericClient,
    ) -> Result<Self, ExecError> {
        let rows = client.query(COUNTERS, &[]).await.map_err(db_error)?;
        let mut counts = BTreeMap::new();
        for row in rows {
            let table: String = row.try_get(0).map_err(|_| ExecError::Driver)?;
            let n: i64 = row.try_get(1).map_err(|_| ExecError::Driver)?;
            counts.insert(table, u64::try_from(n).unwrap_or(0));
        }
        Ok(Changes(counts))
    }

    /// What changed between `before` and `self` (tables without a change left out).
    pub fn since(&self, before: &Changes) -> Changes {
        Changes(
            self.0
                .iter()
                .filter_map(|(table, &after)| {
                    let was = before.0.get(table).copied().unwrap_or(0);
                    let n = after.saturating_sub(was);
                    (n > 0).then(|| (table.clone(), n))
                })
                .collect(),
        )
    }

    /// Rows changed in all tables together.
    pub fn total(&self) -> u64 {
        self.0.values().fold(0u64, |sum, n| sum.saturating_add(*n))
    }

    /// As JSON: `{"schema.table": rows, …}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.0
                .iter()
                .map(|(t, n)| (t.clone(), serde_json::Value::from(*n)))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::Changes;

    fn changes(rows: &[(&str, u64)]) -> Changes {
        Changes(rows.iter().map(|(t, n)| (t.to_string(), *n)).collect())
    }

    #[test]
    fn the_effect_is_the_difference_of_the_counters_table_by_table() {
        let before = changes(&[("public.orders", 100), ("public.log", 3)]);
        let after = changes(&[
            ("public.orders", 110),
            ("public.log", 3),
            ("public.fired", 2),
        ]);
        let effect = after.since(&before);
        assert_eq!(
            effect,
            changes(&[("public.orders", 10), ("public.fired", 2)])
        );
        assert_eq!(effect.total(), 12);
        assert_eq!(
            effect.to_json(),
            serde_json::json!({"public.fired": 2, "public.orders": 10})
        );
        assert_eq!(Changes::default().since(&before).total(), 0);
    }
}
