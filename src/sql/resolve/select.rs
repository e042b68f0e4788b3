//! One SELECT: FROM, WHERE, the select list (with `*` expanded from the
//! catalog), GROUP BY, HAVING, DISTINCT and ORDER BY, each recorded with the
//! kind of use it makes of its columns.

use sqlparser::ast::{
    Distinct, Expr, GroupByExpr, OrderBy, Select, SelectFlavor, SelectItem,
    SelectItemQualifiedWildcardKind, WildcardAdditionalOptions,
};

use super::colname::output_name;
use super::query::{key_form, order_exprs, ordinal, output_by_name, KeyForm};
use super::scope::{is_local_column, lookup_range_var, Column, FromItem, Level};
use super::{unsupported, Resolver};
use crate::sql::error::SqlError;
use crate::sql::ident::{fold, fold_object_name};
use crate::sql::lineage::{Lineage, UseKind};

impl Resolver<'_> {
    /// Resolves a SELECT in the current level, including the query's ORDER BY.
    pub(super) fn select(
        &mut self,
        select: &Select,
        order_by: Option<&OrderBy>,
    ) -> Result<Vec<Column>, SqlError> {
        check_plain_select(select)?;
        self.levels.push(Level::new(FromItem::default()));
        let result = self.select_in_level(select, order_by);
        self.levels.pop();
        result
    }

    fn select_in_level(
        &mut self,
        select: &Select,
        order_by: Option<&OrderBy>,
    ) -> Result<Vec<Column>, SqlError> {
        for table in &select.from {
            let item = self.table_with_joins(table)?;
            self.current_level()?.from.extend(item);
        }
        if let Some(selection) = &select.selection {
            self.predicate(selection, UseKind::Filter)?;
        }
        for window in &select.named_window {
            if let sqlparser::ast::NamedWindowExpr::WindowSpec(spec) = &window.1 {
                self.window_spec(spec)?;
            }
        }
        let outputs = self.projection(&select.projection)?;
        match &select.group_by {
            GroupByExpr::Expressions(exprs, modifiers) if modifiers.is_empty() => {
                for expr in exprs {
                    self.group_key(expr, &outputs)?;
                }
            }
            _ => return unsupported("This GROUP BY form"),
        }
        if let Some(having) = &select.having {
            self.predicate(having, UseKind::Filter)?;
        }
        match &select.distinct {
            None | Some(Distinct::All) => {}
            Some(Distinct::Distinct) => {
                for col in &outputs {
                    self.consume(&col.lineage, UseKind::Distinct)?;
                }
            }
            Some(Distinct::On(exprs)) => {
                for expr in exprs {
                    let lineage = self.output_or_value(expr, &outputs)?;
                    self.consume(&lineage, UseKind::Distinct)?;
                }
            }
        }
        if let Some(order_by) = order_by {
            for item in order_exprs(order_by)? {
                let lineage = self.output_or_value(&item.expr, &outputs)?;
                self.consume(&lineage, UseKind::Order)?;
            }
        }
        Ok(outputs)
    }

    /// Resolves a select list or RETURNING list in the current scope.
    pub(super) fn projection(&mut self, items: &[SelectItem]) -> Result<Vec<Column>, SqlError> {
        let mut outputs = Vec::new();
        for item in items {
            match item {
                SelectItem::UnnamedExpr(expr) => {
                    let lineage = self.value(expr)?;
                    self.consume(&lineage, UseKind::Project)?;
                    let name = output_name(expr, &self.subquery_names);
                    outputs.push(Column::new(name, lineage));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    let lineage = self.value(expr)?;
                    self.consume(&lineage, UseKind::Project)?;
                    outputs.push(Column::new(fold(alias)?, lineage));
                }
                SelectItem::ExprWithAliases { .. } => {
                    return unsupported("Multiple aliases for one expression")
                }
                SelectItem::Wildcard(options) => {
                    check_plain_wildcard(options)?;
                    let columns = self.current_level()?.from.columns.clone();
                    if columns.is_empty() {
                        return unsupported("SELECT * without a FROM clause");
                    }
                    self.push_expanded(columns, &mut outputs)?;
                }
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(name),
                    options,
                ) => {
                    check_plain_wildcard(options)?;
                    let parts = fold_object_name(name)?;
                    let columns = lookup_range_var(&self.levels, &parts)?.columns.clone();
                    self.push_expanded(columns, &mut outputs)?;
                }
                SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::Expr(_), _) => {
                    return unsupported("A wildcard over an expression")
                }
            }
        }
        Ok(outputs)
    }

    fn push_expanded(
        &mut self,
        columns: Vec<Column>,
        outputs: &mut Vec<Column>,
    ) -> Result<(), SqlError> {
        for col in columns {
            self.consume(&col.lineage, UseKind::Project)?;
            outputs.push(col);
        }
        Ok(())
    }

    /// GROUP BY item: an input column or expression, else an output name or ordinal.
    fn group_key(&mut self, expr: &Expr, outputs: &[Column]) -> Result<(), SqlError> {
        if let Expr::GroupingSets(sets) | Expr::Cube(sets) | Expr::Rollup(sets) = expr {
            for expr in sets.iter().flatten() {
                self.group_key(expr, outputs)?;
            }
            return Ok(());
        }
        let lineage = match key_form(expr) {
            KeyForm::Number(n) => ordinal(&n, outputs)?,
            // PostgreSQL (`findTargetlistEntrySQL92`): a bare name in GROUP BY is
            // an input column of this level's FROM if there is one, else an
            // output name, else an expression (which may be an outer column).
            KeyForm::Name(ident) => {
                let name = fold(ident)?;
                if is_local_column(&self.levels, &name) {
                    self.value(expr)?
                } else {
                    match output_by_name(&name, outputs)? {
                        Some(lineage) => lineage,
                        None => self.value(expr)?,
                    }
                }
            }
            KeyForm::Expression => self.value(expr)?,
        };
        self.consume(&lineage, UseKind::Group)
    }

    /// ORDER BY / DISTINCT ON item: ordinal, output name, else an input expression.
    fn output_or_value(&mut self, expr: &Expr, outputs: &[Column]) -> Result<Lineage, SqlError> {
        match key_form(expr) {
            KeyForm::Number(n) => ordinal(&n, outputs),
            KeyForm::Name(ident) => match output_by_name(&fold(ident)?, outputs)? {
                Some(lineage) => Ok(lineage),
                None => self.value(expr),
            },
            KeyForm::Expression => self.value(expr),
        }
    }
}

fn check_plain_wildcard(options: &WildcardAdditionalOptions) -> Result<(), SqlError> {
    if options.opt_ilike.is_some()
        || options.opt_exclude.is_some()
        || options.opt_except.is_some()
        || options.opt_replace.is_some()
        || options.opt_rename.is_some()
        || options.opt_alias.is_some()
    {
        return unsupported("A wildcard modifier");
    }
    Ok(())
}

/// Refuses SELECT features of other dialects that PostgreSQL does not have.
fn check_plain_select(select: &Select) -> Result<(), SqlError> {
    let plain = select.optimizer_hints.is_empty()
        && select.select_modifiers.is_none()
        && select.top.is_none()
        && select.exclude.is_none()
        && select.into.is_none()
        && select.lateral_views.is_empty()
        && select.prewhere.is_none()
        && select.connect_by.is_empty()
        && select.cluster_by.is_empty()
        && select.distribute_by.is_empty()
        && select.sort_by.is_empty()
        && select.qualify.is_none()
        && select.value_table_mode.is_none()
        && matches!(select.flavor, SelectFlavor::Standard);
    if plain {
        Ok(())
    } else {
        unsupported("This SELECT clause")
    }
}
