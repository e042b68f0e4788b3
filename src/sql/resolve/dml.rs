//! INSERT, UPDATE, DELETE and MERGE: targets, written columns and everything read.
//!
//! A write must name a catalog relation as its target. Written columns are
//! recorded per relation (an INSERT without a column list writes the first N
//! catalog columns, N being the width of its source). Every value written is a
//! `WriteSource` use, every condition a `Filter` (or `Join` for MERGE ... ON),
//! and RETURNING is a projection with the read rules of a select list.

use sqlparser::ast::{
    Assignment, AssignmentTarget, ConflictTarget, Delete, FromTable, Insert, Merge, MergeAction,
    MergeInsertKind, MergeUpdateKind, ObjectName, OnConflictAction, OnInsert, OutputClause,
    TableFactor, TableObject, TableWithJoins, Update, UpdateTableFromKind,
};

use super::scope::{Column, FromItem, RangeVar};
use super::{unsupported, Resolver};
use crate::sql::error::SqlError;
use crate::sql::ident::{display_name, fold, fold_object_name};
use crate::sql::lineage::{ColumnRef, Lineage, RelationRef, UseKind};

/// The relation a write changes, with its catalog columns in order.
struct Target {
    relation: RelationRef,
    range_var: RangeVar,
}

impl Target {
    fn column(&self, name: &str) -> Result<&Column, SqlError> {
        self.range_var
            .columns
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| SqlError::UnknownColumn {
                name: display_name(&[&self.relation.schema, &self.relation.name, name]),
            })
    }
}

impl Resolver<'_> {
    fn target(&mut self, name: &ObjectName, alias: Option<String>) -> Result<Target, SqlError> {
        let parts = fold_object_name(name)?;
        let relation = self.catalog_relation(&parts)?;
        let rel = RelationRef {
            schema: relation.schema.clone(),
            name: relation.name.clone(),
        };
        let columns = relation
            .columns
            .iter()
            .map(|c| {
                Column::new(
                    c.name.clone(),
                    Lineage::column(ColumnRef::new(&rel.schema, &rel.name, &c.name)),
                )
            })
            .collect();
        let (rv_name, schema) = match alias {
            Some(alias) => (alias, None),
            None => (rel.name.clone(), Some(rel.schema.clone())),
        };
        self.analysis.write_set(rel.clone());
        Ok(Target {
            relation: rel.clone(),
            range_var: RangeVar {
                name: rv_name,
                schema,
                columns,
                relation: Some(rel),
            },
        })
    }

    fn table_target(&mut self, table: &TableWithJoins) -> Result<Target, SqlError> {
        match (&table.relation, table.joins.is_empty()) {
            (
                TableFactor::Table {
                    name,
                    alias,
                    args: None,
                    ..
                },
                true,
            ) => {
                let alias = match alias {
                    Some(a) if a.columns.is_empty() => Some(fold(&a.name)?),
                    Some(_) => return unsupported("A column alias list on a write target"),
                    None => None,
                };
                self.target(name, alias)
            }
            _ => unsupported("A write target that is not a single table"),
        }
    }

    /// Marks `name` as written after checking it exists.
    fn write_column(&mut self, target: &Target, name: &str) -> Result<(), SqlError> {
        target.column(name)?;
        self.analysis
            .write_set(target.relation.clone())
            .columns
            .insert(name.to_string());
        Ok(())
    }

    fn assignments(&mut self, target: &Target, assignments: &[Assignment]) -> Result<(), SqlError> {
        for assignment in assignments {
            let names = match &assignment.target {
                AssignmentTarget::ColumnName(name) => vec![name],
                AssignmentTarget::Tuple(names) => names.iter().collect(),
            };
            for name in names {
                match fold_object_name(name)?.as_slice() {
                    [column] => self.write_column(target, column)?,
                    _ => return unsupported("A qualified SET target"),
                }
            }
            let lineage = self.value(&assignment.value)?;
            self.consume(&lineage, UseKind::WriteSource)?;
        }
        Ok(())
    }

    fn returning(
        &mut self,
        items: Option<&Vec<sqlparser::ast::SelectItem>>,
    ) -> Result<Vec<Column>, SqlError> {
        match items {
            Some(items) => self.projection(items),
            None => Ok(Vec::new()),
        }
    }

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

    pub(super) fn update(&mut self, update: &Update) -> Result<Vec<Column>, SqlError> {
        if !update.optimizer_hints.is_empty()
            || update.on_cluster.is_some()
            || update.or.is_some()
            || update.output.is_some()
            || !update.order_by.is_empty()
            || update.limit.is_some()
            || update.settings.is_some()
        {
            return unsupported("This UPDATE form");
        }
        let target = self.table_target(&update.table)?;
        let mut scope = FromItem::single(target.range_var.clone());
        self.levels
            .push(super::scope::Level::new(FromItem::default()));
        let result = (|| {
            match &update.from {
                None => {}
                Some(UpdateTableFromKind::AfterSet(tables)) => {
                    for table in tables {
                        let item = self.table_with_joins(table)?;
                        self.current_level()?.from.extend(item);
                    }
                }
                Some(UpdateTableFromKind::BeforeSet(_)) => {
                    return unsupported("UPDATE ... FROM before SET")
                }
            }
            let from = std::mem::take(&mut self.current_level()?.from);
            scope.extend(from);
            self.current_level()?.from = scope;
            self.assignments(&target, &update.assignments)?;
            if let Some(selection) = &update.selection {
                self.predicate(selection, UseKind::Filter)?;
            }
            self.returning(update.returning.as_ref())
        })();
        self.levels.pop();
        result
    }

    pub(super) fn delete(&mut self, delete: &Delete) -> Result<Vec<Column>, SqlError> {
        if !delete.optimizer_hints.is_empty()
            || !delete.tables.is_empty()
            || delete.on_cluster.is_some()
            || delete.output.is_some()
            || !delete.order_by.is_empty()
            || delete.limit.is_some()
            || delete.settings.is_some()
        {
            return unsupported("This DELETE form");
        }
        let tables = match &delete.from {
            FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables) => tables,
        };
        let [table] = tables.as_slice() else {
            return unsupported("DELETE from several tables");
        };
        let target = self.table_target(table)?;
        self.analysis
            .write_set(target.relation.clone())
            .deletes_rows = true;
        self.levels
            .push(super::scope::Level::new(FromItem::default()));
        let result = (|| {
            for table in delete.using.iter().flatten() {
                let item = self.table_with_joins(table)?;
                self.current_level()?.from.extend(item);
            }
            let using = std::mem::take(&mut self.current_level()?.from);
            let mut scope = FromItem::single(target.range_var.clone());
            scope.extend(using);
            self.current_level()?.from = scope;
            if let Some(selection) = &delete.selection {
                self.predicate(selection, UseKind::Filter)?;
            }
            self.returning(delete.returning.as_ref())
        })();
        self.levels.pop();
        result
    }

    pub(super) fn merge(&mut self, merge: &Merge) -> Result<Vec<Column>, SqlError> {
        if !merge.optimizer_hints.is_empty() {
            return unsupported("This MERGE form");
        }
        let target = self.table_target(&TableWithJoins {
            relation: merge.table.clone(),
            joins: Vec::new(),
        })?;
        self.levels
            .push(super::scope::Level::new(FromItem::default()));
        let result = (|| {
            let source = self.table_with_joins(&TableWithJoins {
                relation: merge.source.clone(),
                joins: Vec::new(),
            })?;
            let mut scope = FromItem::single(target.range_var.clone());
            scope.extend(source);
            self.current_level()?.from = scope;
            self.predicate(&merge.on, UseKind::Join)?;
            for clause in &merge.clauses {
                if let Some(predicate) = &clause.predicate {
                    self.predicate(predicate, UseKind::Filter)?;
                }
                match &clause.action {
                    MergeAction::Update(update) => {
                        if update.update_predicate.is_some() || update.delete_predicate.is_some() {
                            return unsupported("MERGE UPDATE ... WHERE");
                        }
                        let MergeUpdateKind::Set(assignments) = &update.kind else {
                            return unsupported("MERGE UPDATE *");
                        };
                        self.assignments(&target, assignments)?;
                    }
                    MergeAction::Insert(insert) => {
                        if insert.insert_predicate.is_some() {
                            return unsupported("MERGE INSERT ... WHERE");
                        }
                        let MergeInsertKind::Values(values) = &insert.kind else {
                            return unsupported("This MERGE INSERT form");
                        };
                        let [row] = values.rows.as_slice() else {
                            return unsupported("MERGE INSERT with several rows");
                        };
                        let names: Vec<String> = if insert.columns.is_empty() {
                            target
                                .range_var
                                .columns
                                .iter()
                                .take(row.content.len())
                                .map(|c| c.name.clone())
                                .collect()
                        } else {
                            insert
                                .columns
                                .iter()
                                .map(|n| match fold_object_name(n)?.as_slice() {
                                    [single] => Ok(single.clone()),
                                    _ => unsupported("A qualified INSERT column"),
                                })
                                .collect::<Result<_, _>>()?
                        };
                        if names.len() != row.content.len() {
                            return Err(SqlError::ColumnCountMismatch {
                                what: "The MERGE INSERT values",
                                got: row.content.len(),
                                expected: names.len(),
                            });
                        }
                        for name in &names {
                            self.write_column(&target, name)?;
                        }
                        for expr in &row.content {
                            let lineage = self.value(expr)?;
                            self.consume(&lineage, UseKind::WriteSource)?;
                        }
                    }
                    MergeAction::Delete { .. } => {
                        self.analysis
                            .write_set(target.relation.clone())
                            .deletes_rows = true;
                    }
                    MergeAction::DoNothing { .. } => {}
                }
            }
            match &merge.output {
                None => Ok(Vec::new()),
                Some(OutputClause::Returning { select_items, .. }) => self.projection(select_items),
                Some(OutputClause::Output { .. }) => unsupported("MERGE ... OUTPUT"),
            }
        })();
        self.levels.pop();
        result
    }
}
