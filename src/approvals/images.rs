//! Row images of a dry run: up to [`IMAGE_ROWS`] rows a queued write changes, as they were
//! before and as they would be after, read by the target table's primary key, and shown
//! only in the columns the requester may read, masked as the requester sees them.
//!
//! The allowed statement is re-parsed and given `RETURNING <target>.*`, and run as a
//! data-modifying CTE whose main query also reads the target table: every part of such a
//! statement sees the snapshot from before the write, so the same statement yields the
//! after images (what the CTE returns) and the before images (the old rows with the same
//! keys), and the count. It runs in a transaction that is always rolled back.
//!
//! Only the plain shapes are imaged (one target table with a primary key; no `UPDATE …
//! FROM`, no `DELETE … USING`); anything else falls back to the plain dry run, which says
//! why there are no images.
//!
//! An imaged preview also records the digest of the keys of every row the write changed
//! ([`keys_digest`]), and the approved write is then run as [`keyed_sql`]: the statement
//! as written, its `RETURNING` extended by the same key, so the execution can check that
//! it changes exactly the rows the approvers were shown (by key) before it commits. A
//! statement that chooses its rows by the clock would otherwise change other rows than
//! the ones previewed. The key of a row is `jsonb_build_array(<key columns>)::text`, made
//! by PostgreSQL in both runs; the digest is the SHA-256 of the keys sorted bytewise and
//! joined by commas (the JSON text of the array of keys, so distinct sets never collide).

use serde_json::{Map, Value};
use sqlparser::ast::{
    FromTable, Ident, ObjectName, ObjectNamePart, SelectItem, SelectItemQualifiedWildcardKind,
    Statement, TableFactor, TableObject, WildcardAdditionalOptions,
};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

use crate::governance::{apply, ReadableRelation};
use crate::sql::lineage::RelationRef;

/// Rows of each image kept in a preview.
pub const IMAGE_ROWS: usize = 20;

/// The primary-key columns of a table, in key order (`NULL` when it has none).
pub fn primary_key_sql(target: &RelationRef) -> String {
    let regclass = format!(
        "{}.{}",
        quote_always(&target.schema),
        quote_always(&target.name)
    );
    format!(
        "SELECT array_agg(a.attname::text ORDER BY array_position(i.indkey::int2[], a.attnum))
           FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
          WHERE i.indrelid = {}::regclass AND i.indisprimary",
        literal(&regclass)
    )
}

/// What a write does to the rows it touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    Insert,
    Update,
    /// Its `RETURNING` gives the rows as they were: there are no after images.
    Delete,
}

/// The statement that images `statement` (an allowed write on `target` with primary key
/// `pk`): one row of (count, rows returned, old rows with their keys); `Err` says why it
/// cannot.
pub fn images_sql(
    statement: &str,
    target: &RelationRef,
    pk: &[String],
) -> Result<(String, WriteKind), String> {
    if pk.is_empty() {
        return Err(format!("{target} has no primary key"));
    }
    let (returning, kind) = with_returning(statement)?;
    let table = format!(
        "{}.{}",
        quote_always(&target.schema),
        quote_always(&target.name)
    );
    let old_key = pk
        .iter()
        .map(|c| format!("o.{}", quote_always(c)))
        .collect::<Vec<_>>();
    let new_key = pk
        .iter()
        .map(|c| format!("c.{}", quote_always(c)))
        .collect::<Vec<_>>();
    let sql = format!(
        "WITH interlock_changed AS ({returning})
         SELECT (SELECT count(*) FROM interlock_changed),
                (SELECT coalesce(jsonb_agg(to_jsonb(c)), '[]'::jsonb)
                   FROM (SELECT * FROM interlock_changed LIMIT {IMAGE_ROWS}) c),
                (SELECT coalesce(jsonb_agg(to_jsonb(o)), '[]'::jsonb)
                   FROM {table} o
                  WHERE ({}) IN (SELECT {} FROM interlock_changed c LIMIT {IMAGE_ROWS})),
                (SELECT encode(sha256(convert_to(
                            coalesce(string_agg(k, ',' ORDER BY k COLLATE \"C\"), ''), 'UTF8')), 'hex')
                   FROM (SELECT jsonb_build_array({})::text AS k FROM interlock_changed c) ks)",
        old_key.join(", "),
        new_key.join(", "),
        new_key.join(", "),
    );
    Ok((sql, kind))
}

/// The name of the key column [`keyed_sql`] adds.
pub const KEY_COLUMN: &str = "interlock key";

/// `statement` (an allowed write on `target` with primary key `pk`, of a shape
/// [`images_sql`] images) with its `RETURNING` extended by one last column, the key of each
/// row it changes, made as the preview made it.
pub fn keyed_sql(statement: &str, target: &RelationRef, pk: &[String]) -> Result<String, String> {
    if pk.is_empty() {
        return Err(format!("{target} has no primary key"));
    }
    let mut parsed = reparse(statement)?;
    let plain = plain_write(&mut parsed)?;
    let key = format!(
        "jsonb_build_array({})::text AS \"{KEY_COLUMN}\"",
        pk.iter()
            .map(|c| format!("{}.{}", plain.qualifier, quote_always(c)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let item = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&key)
        .and_then(|mut p| p.parse_select_item())
        .map_err(|e| format!("the key of {target} could not be formed: {e}"))?;
    plain.returning.get_or_insert_with(Vec::new).push(item);
    Ok(parsed.to_string())
}

pub use crate::sources::postgres::row_keys::keys_digest;

/// `statement` with `RETURNING <target>.*` in place of its own `RETURNING`.
fn with_returning(statement: &str) -> Result<(String, WriteKind), String> {
    let mut parsed = reparse(statement)?;
    let plain = plain_write(&mut parsed)?;
    *plain.returning = Some(vec![SelectItem::QualifiedWildcard(
        SelectItemQualifiedWildcardKind::ObjectName(plain.qualifier),
        WildcardAdditionalOptions::default(),
    )]);
    let kind = plain.kind;
    Ok((parsed.to_string(), kind))
}

fn reparse(statement: &str) -> Result<Statement, String> {
    let parsed = Parser::parse_sql(&PostgreSqlDialect {}, statement)
        .map_err(|e| format!("the statement could not be re-read: {e}"))?;
    match <[Statement; 1]>::try_from(parsed) {
        Ok([one]) => Ok(one),
        Err(_) => Err("not a single statement".into()),
    }
}

/// A write of the imaged shape: what it does, the name its `RETURNING` calls the target
/// by, and its `RETURNING`.
struct PlainWrite<'a> {
    kind: WriteKind,
    qualifier: ObjectName,
    returning: &'a mut Option<Vec<SelectItem>>,
}

fn plain_write(one: &mut Statement) -> Result<PlainWrite<'_>, String> {
    let by_alias = |name: &ObjectName, alias: Option<&Ident>| {
        alias.map_or_else(
            || name.clone(),
            |a| ObjectName(vec![ObjectNamePart::Identifier(a.clone())]),
        )
    };
    match one {
        Statement::Update(u) => {
            if u.from.is_some() || !u.table.joins.is_empty() {
                return Err("an UPDATE that reads other tables is not imaged".into());
            }
            let TableFactor::Table { name, alias, .. } = &u.table.relation else {
                return Err("the UPDATE target is not a plain table".into());
            };
            Ok(PlainWrite {
                kind: WriteKind::Update,
                qualifier: by_alias(name, alias.as_ref().map(|a| &a.name)),
                returning: &mut u.returning,
            })
        }
        Statement::Delete(d) => {
            if d.using.is_some() || !d.tables.is_empty() {
                return Err("a DELETE that reads other tables is not imaged".into());
            }
            let (FromTable::WithFromKeyword(from) | FromTable::WithoutKeyword(from)) = &d.from;
            let [only] = from.as_slice() else {
                return Err("a DELETE of several tables is not imaged".into());
            };
            if !only.joins.is_empty() {
                return Err("a DELETE that reads other tables is not imaged".into());
            }
            let TableFactor::Table { name, alias, .. } = &only.relation else {
                return Err("the DELETE target is not a plain table".into());
            };
            Ok(PlainWrite {
                kind: WriteKind::Delete,
                qualifier: by_alias(name, alias.as_ref().map(|a| &a.name)),
                returning: &mut d.returning,
            })
        }
        Statement::Insert(i) => {
            let TableObject::TableName(name) = &i.table else {
                return Err("the INSERT target is not a plain table".into());
            };
            Ok(PlainWrite {
                kind: WriteKind::Insert,
                qualifier: by_alias(name, i.table_alias.as_ref().map(|a| &a.alias)),
                returning: &mut i.returning,
            })
        }
        _ => Err("only INSERT, UPDATE and DELETE are imaged".into()),
    }
}

/// The rows of one image as the requester may see them: only readable columns, in the
/// catalog's order, masked.
pub fn view(rows: &Value, readable: &ReadableRelation, key: &[u8]) -> Value {
    let Some(rows) = rows.as_array() else {
        return Value::Array(Vec::new());
    };
    Value::Array(
        rows.iter()
            .map(|row| {
                let mut out = Map::new();
                for c in &readable.columns {
                    let value = row.get(&c.name).cloned().unwrap_or(Value::Null);
                    let shown = match &c.mask {
                        Some(strategy) => apply(strategy, &value, key),
                        None => value,
                    };
                    out.insert(c.name.clone(), shown);
                }
                Value::Object(out)
            })
            .collect(),
    )
}

fn quote_always(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn orders() -> RelationRef {
        RelationRef {
            schema: "public".into(),
            name: "orders".into(),
        }
    }

    #[test]
    fn plain_writes_get_their_target_returned_and_others_are_refused() {
        let pk = vec!["id".to_string()];
        let cases = [
            ("UPDATE public.orders SET status = 'x' WHERE id = 1", Some("RETURNING public.orders.*")),
            ("UPDATE public.orders AS o SET status = 'x' WHERE o.id = 1 RETURNING o.id", Some("RETURNING o.*")),
            ("DELETE FROM public.orders WHERE id = 1", Some("RETURNING public.orders.*")),
            ("INSERT INTO public.orders (id) VALUES (1)", Some("RETURNING public.orders.*")),
            ("UPDATE public.orders SET status = c.name FROM public.customers c WHERE c.id = orders.customer_id", None),
            ("DELETE FROM public.orders USING public.customers c WHERE c.id = orders.customer_id", None),
        ];
        for (sql, want) in cases {
            let got = images_sql(sql, &orders(), &pk);
            match want {
                Some(returning) => {
                    let (text, _) = got.unwrap_or_else(|e| panic!("{sql}: {e}"));
                    assert!(text.contains(returning), "{sql}: {text}");
                    assert!(
                        text.contains(
                            r#"WHERE (o."id") IN (SELECT c."id" FROM interlock_changed c"#
                        ),
                        "{text}"
                    );
                }
                None => assert!(got.is_err(), "{sql}"),
            }
        }
        assert!(images_sql("UPDATE public.orders SET status = 'x'", &orders(), &[]).is_err());
        assert!(primary_key_sql(&RelationRef {
            schema: "a'b".into(),
            name: "t".into()
        })
        .contains(r#"'"a''b"."t"'::regclass"#));
    }
}
