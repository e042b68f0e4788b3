//! INSERT, including the implicit column list and ON CONFLICT.
//!
//! Without a column list an INSERT writes the first N catalog columns, N
//! being the width of its source, so `INSERT INTO users VALUES (1, 'x')`
//! writes `(id, email)` and a third value would write `ssn`. `EXCLUDED` is the
//! proposed row: each of its columns carries the lineage of the value the
//! INSERT supplies for it, not stored data.

use sqlparser::ast::{ConflictTarget, Insert, OnConflictAction, OnInsert, TableObject};

use super::scope::{Column, FromItem, RangeVar};
use super::{unsupported, Resolver};
use crate::sql::error::SqlError;
use crate::sql::ident::{fold, fold_object_name};
use crate::sql::lineage::{Lineage, UseKind};

impl Resolver<'_> {
    pub(super) fn insert(&mut self, insert: &Insert) -> Result<Vec<Column>, SqlError> {
        let plain = insert.optimizer_hints.is_empty()
            && insert.or.is_none()
            && !insert.ignore
            && !insert.by_name
            && !insert.overwrite
            && insert.assignments.is_empty()
            && insert.partitioned.is_none()
            && insert.after_columns.is_empty()
            && insert.overriding.is_none()
            && !insert.has_table_keyword
            && insert.output.is_none()
            && !insert.replace_into
            && insert.priority.is_none()
            && insert.insert_alias.is_none()
            && insert.settings.is_none()
            && insert.format_clause.is_none()
            && insert.multi_table_insert_type.is_none()
            && insert.multi_table_into_clauses.is_empty()
            && insert.multi_table_when_clauses.is_empty()
            && insert.multi_table_else_clause.is_none();
        if !plain {
            return unsupported("This INSERT form");
        }
        let TableObject::TableName(name) = &insert.table else {
            return unsupported("INSERT into a function or subquery");
        };
        // The source is resolved before the target is in scope: it cannot see it.
        let sources = match &insert.source {
            Some(query) => self.query(query)?,
            None => Vec::new(),
        };
        let alias = insert
            .table_alias
            .as_ref()
            .map(|a| fold(&a.alias))
            .transpose()?;
        let target = self.target(name, alias)?;
        let names: Vec<String> = if insert.columns.is_empty() {
            let all = &target.range_var.columns;
            if sources.len() > all.len() {
                return Err(SqlError::ColumnCountMismatch {
                    what: "The INSERT source",
                    got: sources.len(),
                    expected: all.len(),
                });
            }
            all.iter()
                .take(sources.len())
                .map(|c| c.name.clone())
                .collect()
        } else {
            let names = insert
                .columns
                .iter()
                .map(|n| match fold_object_name(n)?.as_slice() {
                    [single] => Ok(single.clone()),
                    _ => unsupported("A qualified INSERT column"),
                })
                .collect::<Result<Vec<_>, _>>()?;
            if insert.source.is_some() && names.len() != sources.len() {
                return Err(SqlError::ColumnCountMismatch {
                    what: "The INSERT source",
                    got: sources.len(),
                    expected: names.len(),
                });
            }
            names
        };
        for name in &names {
            self.write_column(&target, name)?;
        }
        for source in &sources {
            self.consume(&source.lineage, UseKind::WriteSource)?;
        }
        let mut scope = FromItem::single(target.range_var.clone());
        if let Some(on) = &insert.on {
            let OnInsert::OnConflict(conflict) = on else {
                return unsupported("ON DUPLICATE KEY UPDATE");
            };
            // EXCLUDED is the proposed row: each column carries what the INSERT supplies.
            let excluded = target
                .range_var
                .columns
                .iter()
                .map(|c| Column {
                    name: c.name.clone(),
                    lineage: names
                        .iter()
                        .position(|n| n == &c.name)
                        .and_then(|i| sources.get(i))
                        .map_or_else(
                            || std::rc::Rc::new(Lineage::constant()),
                            |s| s.lineage.clone(),
                        ),
                })
                .collect();
            let excluded = RangeVar {
                name: "excluded".to_string(),
                schema: None,
                columns: excluded,
                relation: None,
            };
            let mut conflict_scope = scope.clone();
            conflict_scope.range_vars.push(excluded);
            self.with_level(conflict_scope, |r| {
                match &conflict.conflict_target {
                    Some(ConflictTarget::Columns { columns, predicate }) => {
                        for column in columns {
                            let lineage = Lineage::clone(&target.column(&fold(column)?)?.lineage);
                            r.consume(&lineage, UseKind::Filter)?;
                        }
                        if let Some(predicate) = predicate {
                            r.predicate(predicate, UseKind::Filter)?;
                        }
                    }
                    Some(ConflictTarget::OnConstraint(_)) | None => {}
                }
                if let OnConflictAction::DoUpdate(update) = &conflict.action {
                    r.assignments(&target, &update.assignments)?;
                    if let Some(selection) = &update.selection {
                        r.predicate(selection, UseKind::Filter)?;
                    }
                }
                Ok(())
            })?;
        }
        scope.columns = target.range_var.columns.clone();
        self.with_level(scope, |r| r.returning(insert.returning.as_ref()))
    }
}
