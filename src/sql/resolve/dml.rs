//! Write targets, SET assignments, UPDATE, DELETE and MERGE (INSERT is in
//! `insert`): targets, written columns and everything read.
//!
//! A write must name a catalog relation as its target. Written columns are
//! recorded per relation (an INSERT without a column list writes the first N
//! catalog columns, N being the width of its source). Every value written is a
//! `WriteSource` use, every condition a `Filter` (or `Join` for MERGE ... ON),
//! and RETURNING is a projection with the read rules of a select list.

use sqlparser::ast::{
    Assignment, AssignmentTarget, Delete, FromTable, Merge, MergeAction, MergeInsertKind,
    MergeUpdateKind, ObjectName, OutputClause, TableFactor, TableWithJoins, Update,
    UpdateTableFromKind,
};

use super::scope::{Column, FromItem, RangeVar};
use super::{unsupported, Resolver};
use crate::sql::error::SqlError;
use crate::sql::ident::{display_name, fold, fold_object_name};
use crate::sql::lineage::{ColumnRef, Lineage, RelationRef, UseKind};

/// The relation a write changes, with its catalog columns in order.
pub(super) struct Target {
    pub(super) relation: RelationRef,
    pub(super) range_var: RangeVar,
}

impl Target {
    pub(super) fn column(&self, name: &str) -> Result<&Column, SqlError> {
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
    pub(super) fn target(
        &mut self,
        name: &ObjectName,
        alias: Option<String>,
    ) -> Result<Target, SqlError> {
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
    pub(super) fn write_column(&mut self, target: &Target, name: &str) -> Result<(), SqlError> {
        target.column(name)?;
        self.analysis
            .write_set(target.relation.clone())
            .columns
            .insert(name.to_string());
        Ok(())
    }

    pub(super) fn assignments(
        &mut self,
        target: &Target,
        assignments: &[Assignment],
    ) -> Result<(), SqlError> {
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

    pub(super) fn returning(
        &mut self,
        items: Option<&Vec<sqlparser::ast::SelectItem>>,
    ) -> Result<Vec<Column>, SqlError> {
        match items {
            Some(items) => self.projection(items),
            None => Ok(Vec::new()),
        }
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
