//! Queries: WITH (including recursive CTEs), set operations, VALUES, LIMIT,
//! and ORDER BY over set-operation outputs. SELECT itself is in `select`.

use sqlparser::ast::{
    Expr, LimitClause, OrderBy, OrderByExpr, OrderByKind, Query, SetExpr, SetOperator,
    SetQuantifier, Value, Values, With,
};

use std::collections::BTreeSet;
use std::rc::Rc;

use super::scope::{rename, Column, CteDef, FromItem, Level};
use super::{unsupported, Resolver};
use crate::sql::error::SqlError;
use crate::sql::ident::fold;
use crate::sql::lineage::{Lineage, UseKind};

/// Upper bound on re-resolving a recursive CTE until its lineage is stable.
const RECURSIVE_CTE_PASSES: usize = 8;

impl Resolver<'_> {
    /// Resolves a query in a new scope level and returns its output columns.
    pub(super) fn query(&mut self, query: &Query) -> Result<Vec<Column>, SqlError> {
        if query.settings.is_some()
            || query.format_clause.is_some()
            || !query.pipe_operators.is_empty()
            || query.for_clause.is_some()
            || !query.locks.is_empty()
        {
            return unsupported("This query clause");
        }
        self.levels.push(Level::new(FromItem::default()));
        let result = self.query_in_level(query);
        self.levels.pop();
        result
    }

    fn query_in_level(&mut self, query: &Query) -> Result<Vec<Column>, SqlError> {
        if let Some(with) = &query.with {
            self.with_clause(with)?;
        }
        let outputs = match query.body.as_ref() {
            SetExpr::Select(select) => self.select(select, query.order_by.as_ref())?,
            body => {
                let outputs = self.set_expr(body)?;
                if let Some(order_by) = &query.order_by {
                    self.order_by_outputs(order_by, &outputs)?;
                }
                outputs
            }
        };
        match &query.limit_clause {
            None => {}
            Some(LimitClause::LimitOffset {
                limit,
                offset,
                limit_by,
            }) => {
                if !limit_by.is_empty() {
                    return unsupported("LIMIT BY");
                }
                if let Some(limit) = limit {
                    self.operand(limit)?;
                }
                if let Some(offset) = offset {
                    self.operand(&offset.value)?;
                }
            }
            Some(LimitClause::OffsetCommaLimit { .. }) => {
                return unsupported("LIMIT offset, count")
            }
        }
        if let Some(fetch) = &query.fetch {
            if let Some(quantity) = &fetch.quantity {
                self.operand(quantity)?;
            }
        }
        Ok(outputs)
    }

    /// Registers the CTEs of a WITH clause in the current level.
    ///
    /// Without RECURSIVE each CTE sees only the CTEs before it. With RECURSIVE
    /// every CTE of the list is visible to every other, forward references
    /// included (PostgreSQL's `transformWithClause`): the CTEs are resolved in
    /// dependency order, so that each reference binds to the CTE of that name
    /// and never to a base table it shadows. References between different CTEs
    /// that form a cycle are refused, as PostgreSQL refuses them.
    fn with_clause(&mut self, with: &With) -> Result<(), SqlError> {
        let mut names = Vec::with_capacity(with.cte_tables.len());
        for cte in &with.cte_tables {
            if cte.from.is_some() {
                return unsupported("CTE ... FROM");
            }
            let name = fold(&cte.alias.name)?;
            if names.contains(&name) {
                return Err(SqlError::Unsupported {
                    what: format!(
                        "The WITH query name {} given twice",
                        crate::sql::ident::display_name(&[name.as_str()])
                    ),
                });
            }
            names.push(name);
        }
        // Under RECURSIVE: the unqualified relation names each CTE mentions, found once.
        let mentioned = if with.recursive {
            with.cte_tables
                .iter()
                .map(|cte| mentioned_names(&cte.query))
                .collect::<Result<Vec<_>, _>>()?
        } else {
            Vec::new()
        };
        let order = if with.recursive {
            recursive_order(&names, &mentioned)?
        } else {
            (0..names.len()).collect()
        };
        for index in order {
            let (Some(cte), Some(name)) = (with.cte_tables.get(index), names.get(index)) else {
                return unsupported("A WITH clause");
            };
            let aliases = alias_names(&cte.alias.columns)?;
            let self_reference = mentioned.get(index).is_some_and(|m| m.contains(name));
            let columns = match cte.query.body.as_ref() {
                SetExpr::SetOperation { left, .. } if self_reference => {
                    self.recursive_cte(name, &aliases, left, &cte.query)?
                }
                _ if self_reference => {
                    return unsupported("A recursive CTE that is not a UNION of two branches")
                }
                _ => {
                    let mut columns = self.query(&cte.query)?;
                    rename(&mut columns, &aliases, "The CTE column list")?;
                    columns
                }
            };
            self.current_level()?.ctes.push(CteDef {
                name: name.clone(),
                columns,
            });
        }
        Ok(())
    }

    /// A recursive CTE: start from the anchor branch, then re-resolve the whole
    /// query with the CTE visible until its lineage stops growing.
    fn recursive_cte(
        &mut self,
        name: &str,
        names: &[String],
        anchor: &SetExpr,
        query: &Query,
    ) -> Result<Vec<Column>, SqlError> {
        let mut columns = self.with_level(FromItem::default(), |r| r.set_expr(anchor))?;
        rename(&mut columns, names, "The CTE column list")?;
        for _ in 0..RECURSIVE_CTE_PASSES {
            self.current_level()?.ctes.push(CteDef {
                name: name.to_string(),
                columns: columns.clone(),
            });
            let result = self.query(query);
            self.current_level()?.ctes.pop();
            let mut next = result?;
            rename(&mut next, names, "The CTE column list")?;
            if next.len() != columns.len() {
                return Err(SqlError::ColumnCountMismatch {
                    what: "The recursive CTE",
                    got: next.len(),
                    expected: columns.len(),
                });
            }
            let mut grown = false;
            for (col, new) in columns.iter_mut().zip(&next) {
                let before = Lineage::clone(&col.lineage);
                Rc::make_mut(&mut col.lineage).merge(&new.lineage);
                grown |= *col.lineage != before;
            }
            if !grown {
                return Ok(columns);
            }
        }
        unsupported("A recursive CTE whose lineage does not settle")
    }

    /// Resolves a set expression (the body of a query).
    pub(super) fn set_expr(&mut self, body: &SetExpr) -> Result<Vec<Column>, SqlError> {
        match body {
            SetExpr::Select(select) => self.select(select, None),
            SetExpr::Query(query) => self.query(query),
            SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => self.set_operation(left, op, set_quantifier, right),
            SetExpr::Values(values) => self.values(values),
            SetExpr::Insert(sqlparser::ast::Statement::Insert(insert)) => self.insert(insert),
            SetExpr::Update(sqlparser::ast::Statement::Update(update)) => self.update(update),
            SetExpr::Delete(sqlparser::ast::Statement::Delete(delete)) => self.delete(delete),
            SetExpr::Merge(sqlparser::ast::Statement::Merge(merge)) => self.merge(merge),
            SetExpr::Insert(_) | SetExpr::Update(_) | SetExpr::Delete(_) | SetExpr::Merge(_) => {
                unsupported("This data-modifying statement")
            }
            SetExpr::Table(_) => unsupported("TABLE name"),
        }
    }

    fn set_operation(
        &mut self,
        left: &SetExpr,
        op: &SetOperator,
        quantifier: &SetQuantifier,
        right: &SetExpr,
    ) -> Result<Vec<Column>, SqlError> {
        let dedup = match (op, quantifier) {
            (SetOperator::Union, SetQuantifier::All) => false,
            (
                SetOperator::Union | SetOperator::Intersect | SetOperator::Except,
                SetQuantifier::All | SetQuantifier::Distinct | SetQuantifier::None,
            ) => true,
            _ => return unsupported("This set operation"),
        };
        let mut outputs = self.set_expr(left)?;
        let others = self.set_expr(right)?;
        if outputs.len() != others.len() {
            return Err(SqlError::ColumnCountMismatch {
                what: "Each branch of the set operation",
                got: others.len(),
                expected: outputs.len(),
            });
        }
        for (col, other) in outputs.iter_mut().zip(&others) {
            Rc::make_mut(&mut col.lineage).merge(&other.lineage);
        }
        if dedup {
            for col in &outputs {
                self.consume(&col.lineage, UseKind::SetCompare)?;
            }
        }
        Ok(outputs)
    }

    fn values(&mut self, values: &Values) -> Result<Vec<Column>, SqlError> {
        let mut outputs: Vec<Column> = Vec::new();
        for (row_index, row) in values.rows.iter().enumerate() {
            if row_index > 0 && row.content.len() != outputs.len() {
                return Err(SqlError::ColumnCountMismatch {
                    what: "A VALUES row",
                    got: row.content.len(),
                    expected: outputs.len(),
                });
            }
            for (i, expr) in row.content.iter().enumerate() {
                let lineage = self.value(expr)?;
                self.consume(&lineage, UseKind::Project)?;
                match outputs.get_mut(i) {
                    Some(col) => Rc::make_mut(&mut col.lineage).merge(&lineage),
                    None => outputs.push(Column::new(format!("column{}", i + 1), lineage)),
                }
            }
        }
        Ok(outputs)
    }

    /// ORDER BY of a set operation or VALUES: output names and ordinals only.
    fn order_by_outputs(&mut self, order_by: &OrderBy, outputs: &[Column]) -> Result<(), SqlError> {
        for item in order_exprs(order_by)? {
            let lineage = match key_form(&item.expr) {
                KeyForm::Number(n) => ordinal(&n, outputs)?,
                KeyForm::Name(ident) => {
                    let name = fold(ident)?;
                    output_by_name(&name, outputs)?.ok_or_else(|| SqlError::UnknownColumn {
                        name: crate::sql::ident::display_name(&[name.as_str()]),
                    })?
                }
                KeyForm::Expression => {
                    return unsupported("ORDER BY an expression over a set operation")
                }
            };
            self.consume(&lineage, UseKind::Order)?;
        }
        Ok(())
    }
}

/// The order in which the CTEs of a `WITH RECURSIVE` list are resolved: each
/// after every other CTE of the list it references. References are found
/// conservatively (any unqualified relation name equal to a CTE's, wherever it
/// appears, even where an inner WITH would shadow it), so the order always
/// respects PostgreSQL's; a spurious cycle is a refusal, never a wrong binding.
fn recursive_order(
    names: &[String],
    mentioned: &[BTreeSet<String>],
) -> Result<Vec<usize>, SqlError> {
    let deps: Vec<Vec<usize>> = mentioned
        .iter()
        .enumerate()
        .map(|(i, m)| {
            (0..names.len())
                .filter(|&j| j != i && names.get(j).is_some_and(|n| m.contains(n)))
                .collect()
        })
        .collect();
    let mut order = Vec::with_capacity(names.len());
    let mut done = vec![false; names.len()];
    while order.len() < names.len() {
        let ready = (0..names.len()).find(|&i| !done[i] && deps[i].iter().all(|&j| done[j]));
        let Some(i) = ready else {
            return unsupported("Mutual recursion between WITH queries");
        };
        done[i] = true;
        order.push(i);
    }
    Ok(order)
}

/// Every unqualified relation name `query` mentions, folded, wherever it appears.
fn mentioned_names(query: &Query) -> Result<BTreeSet<String>, SqlError> {
    use std::ops::ControlFlow;
    let mut names = BTreeSet::new();
    let mut failed = None;
    let _ = sqlparser::ast::visit_relations(query, |relation| {
        if let [single] = relation.0.as_slice() {
            match single.as_ident().map(fold) {
                Some(Ok(folded)) => {
                    names.insert(folded);
                }
                Some(Err(e)) => {
                    failed = Some(e);
                    return ControlFlow::Break(());
                }
                None => {}
            }
        }
        ControlFlow::Continue(())
    });
    match failed {
        Some(e) => Err(e),
        None => Ok(names),
    }
}

pub(super) fn order_exprs(order_by: &OrderBy) -> Result<&[OrderByExpr], SqlError> {
    if order_by.interpolate.is_some() {
        return unsupported("ORDER BY ... INTERPOLATE");
    }
    match &order_by.kind {
        OrderByKind::Expressions(items) if items.iter().all(|i| i.with_fill.is_none()) => Ok(items),
        _ => unsupported("This ORDER BY form"),
    }
}

/// What PostgreSQL's grammar makes of an ORDER BY, DISTINCT ON or GROUP BY item before it
/// looks for an ordinal or an output name (`findTargetlistEntrySQL92`): the parser keeps
/// no node for parentheses, and folds a minus over a numeric constant into the constant
/// (`doNegate`), so `(1)`, `((1))` and `-(-1)` are the ordinal 1 and `(name)` is a bare
/// name. A unary `+`, a cast or a collation is an operator node: an expression.
pub(super) enum KeyForm<'a> {
    /// A numeric constant, with its folded sign.
    Number(String),
    /// A bare, unqualified name.
    Name(&'a sqlparser::ast::Ident),
    Expression,
}

pub(super) fn key_form(expr: &Expr) -> KeyForm<'_> {
    match expr {
        Expr::Nested(inner) => key_form(inner),
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => KeyForm::Number(n.clone()),
            _ => KeyForm::Expression,
        },
        Expr::UnaryOp {
            op: sqlparser::ast::UnaryOperator::Minus,
            expr,
        } => match key_form(expr) {
            KeyForm::Number(n) => KeyForm::Number(match n.strip_prefix('-') {
                Some(positive) => positive.to_string(),
                None => format!("-{n}"),
            }),
            _ => KeyForm::Expression,
        },
        Expr::Identifier(ident) => KeyForm::Name(ident),
        _ => KeyForm::Expression,
    }
}

/// The output column at a 1-based position written `n`.
pub(super) fn ordinal(n: &str, outputs: &[Column]) -> Result<Lineage, SqlError> {
    n.parse::<usize>()
        .ok()
        .and_then(|i| i.checked_sub(1))
        .and_then(|i| outputs.get(i))
        .map(|c| Lineage::clone(&c.lineage))
        .ok_or_else(|| SqlError::UnknownColumn {
            name: format!("position {}", n.chars().take(12).collect::<String>()),
        })
}

/// The output column a bare name in ORDER BY, DISTINCT ON or GROUP BY names.
/// Several outputs of that name are ambiguous unless they carry the same value
/// (PostgreSQL accepts `SELECT a, a ... ORDER BY a`); identical lineage stands in
/// for PostgreSQL's equal expressions, and anything else is refused.
pub(super) fn output_by_name(name: &str, outputs: &[Column]) -> Result<Option<Lineage>, SqlError> {
    let mut hits = outputs.iter().filter(|c| c.name == name);
    let Some(first) = hits.next() else {
        return Ok(None);
    };
    if hits.any(|other| other.lineage != first.lineage || first.lineage.whole_row.is_some()) {
        return Err(SqlError::AmbiguousColumn {
            name: crate::sql::ident::display_name(&[name]),
        });
    }
    Ok(Some(Lineage::clone(&first.lineage)))
}

/// Folds a table alias column list; typed column definitions are refused.
pub(super) fn alias_names(
    columns: &[sqlparser::ast::TableAliasColumnDef],
) -> Result<Vec<String>, SqlError> {
    columns
        .iter()
        .map(|c| match c.data_type {
            None => fold(&c.name),
            Some(_) => unsupported("A column definition list"),
        })
        .collect()
}
