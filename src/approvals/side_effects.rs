//! What else a write may change besides the rows its plan names: the enabled user
//! triggers on the tables it writes, and the foreign keys of other tables whose
//! `ON DELETE` / `ON UPDATE` action changes rows (`CASCADE`, `SET NULL`, `SET DEFAULT`).
//! A plan shows neither, and the approved bound counts every row the write changes
//! (`sources::postgres::changes`), so an explain preview names them for the approver.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::sources::postgres::execute::{self, CapForm, ExecError, Limits, Mode};
use crate::sources::postgres::pool::SourcePools;
use crate::sql::lineage::RelationRef;

/// The triggers and foreign-key actions that may change rows when `tables` are written,
/// as a JSON array of sentences (empty when there are none).
pub async fn of(pools: &SourcePools, tables: &[RelationRef]) -> Result<Value, ExecError> {
    if tables.is_empty() {
        return Ok(Value::Array(Vec::new()));
    }
    let limits = Limits {
        max_rows: 1,
        max_bytes: 1 << 20,
    };
    let never = CancellationToken::new();
    let rows = execute::run(
        pools,
        Mode::Query(CapForm::Wrapped),
        &sql(tables),
        &[],
        limits,
        &never,
        None,
    )
    .await?;
    Ok(rows
        .rows
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next())
        .unwrap_or(Value::Array(Vec::new())))
}

/// One row, one column: the sentences, in a stable order.
fn sql(tables: &[RelationRef]) -> String {
    let names = tables
        .iter()
        .map(|t| {
            let quoted = format!("{}.{}", quote(&t.schema), quote(&t.name));
            format!("'{}'", quoted.replace('\'', "''"))
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "SELECT coalesce(jsonb_agg(what ORDER BY what), '[]'::jsonb) FROM (
           SELECT format('trigger %I on %s (%s)', t.tgname, t.tgrelid::regclass,
                         CASE WHEN t.tgtype & 1 = 1 THEN 'for each row' ELSE 'for each statement' END) AS what
             FROM pg_catalog.pg_trigger t
            WHERE t.tgrelid = ANY (ARRAY[{names}]::regclass[])
              AND NOT t.tgisinternal AND t.tgenabled <> 'D'
           UNION ALL
           SELECT format('foreign key %I on %s (%s)', c.conname, c.conrelid::regclass,
                         concat_ws(', ',
                           CASE c.confdeltype WHEN 'c' THEN 'ON DELETE CASCADE' WHEN 'n' THEN 'ON DELETE SET NULL'
                                              WHEN 'd' THEN 'ON DELETE SET DEFAULT' END,
                           CASE c.confupdtype WHEN 'c' THEN 'ON UPDATE CASCADE' WHEN 'n' THEN 'ON UPDATE SET NULL'
                                              WHEN 'd' THEN 'ON UPDATE SET DEFAULT' END))
             FROM pg_catalog.pg_constraint c
            WHERE c.contype = 'f' AND c.confrelid = ANY (ARRAY[{names}]::regclass[])
              AND (c.confdeltype IN ('c', 'n', 'd') OR c.confupdtype IN ('c', 'n', 'd'))
         ) s"
    )
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
