//! Expressions: column references, operators, casts, subqueries and calls.
//!
//! [`Resolver::value`] returns the lineage of an expression's value and
//! records every operand of a function, operator, cast or CASE as an
//! `Expression` use. Conditions are handled in `predicate`, calls in `call`.

use sqlparser::ast::{CeilFloorKind, DateTimeField, Expr, InTarget, Value};

use super::scope::{lookup, Found};
use super::{unsupported, Resolver};
use crate::sql::error::SqlError;
use crate::sql::functions::resolve as resolve_function;
use crate::sql::ident::{fold, fold_object_name};
use crate::sql::lineage::{Lineage, UseKind};
use crate::sql::operators::{cast_target, check_binary_operator, check_unary_operator};

impl Resolver<'_> {
    /// An operand of an operator or function: resolved and recorded as an expression use.
    pub(super) fn operand(&mut self, expr: &Expr) -> Result<Lineage, SqlError> {
        let lineage = self.value(expr)?;
        self.consume(&lineage, UseKind::Expression)?;
        Ok(lineage)
    }

    pub(super) fn operands<'e>(
        &mut self,
        exprs: impl IntoIterator<Item = &'e Expr>,
    ) -> Result<Lineage, SqlError> {
        let mut parts = Vec::new();
        for expr in exprs {
            parts.push(self.operand(expr)?);
        }
        Ok(Lineage::derived(&parts))
    }

    /// A subquery used as one value: it must return exactly one column.
    pub(super) fn scalar_subquery(
        &mut self,
        query: &sqlparser::ast::Query,
    ) -> Result<Lineage, SqlError> {
        let mut columns = self.query(query)?;
        if let Some(first) = columns.first() {
            self.subquery_names
                .insert(query as *const sqlparser::ast::Query, first.name.clone());
        }
        match (columns.pop(), columns.is_empty()) {
            (Some(column), true) => Ok(std::rc::Rc::unwrap_or_clone(column.lineage)),
            (first, _) => Err(SqlError::ColumnCountMismatch {
                what: "A subquery used as a value",
                got: columns.len() + usize::from(first.is_some()),
                expected: 1,
            }),
        }
    }

    /// The lineage of an expression's value.
    pub(super) fn value(&mut self, expr: &Expr) -> Result<Lineage, SqlError> {
        match expr {
            Expr::Identifier(ident) => self.column(&[fold(ident)?]),
            Expr::CompoundIdentifier(idents) => {
                let parts = idents.iter().map(fold).collect::<Result<Vec<_>, _>>()?;
                self.column(&parts)
            }
            Expr::CompoundFieldAccess { root, access_chain } => {
                self.field_access(root, access_chain)
            }
            Expr::Nested(inner) => self.value(inner),
            Expr::Value(v) => match &v.value {
                // `$n` was range-checked against the bound parameters while tokenizing.
                Value::Placeholder(p) if !p.starts_with('$') => unsupported("This placeholder"),
                _ => Ok(Lineage::constant()),
            },
            Expr::TypedString(typed) => {
                cast_target(&typed.data_type)?;
                Ok(Lineage::constant())
            }
            Expr::Function(function) => self.function(function),
            Expr::Subquery(query) => self.scalar_subquery(query),
            Expr::Exists { subquery, .. } => {
                self.query(subquery)?;
                Ok(Lineage::derived([]))
            }
            Expr::IsFalse(e)
            | Expr::IsNotFalse(e)
            | Expr::IsTrue(e)
            | Expr::IsNotTrue(e)
            | Expr::IsNull(e)
            | Expr::IsNotNull(e)
            | Expr::IsUnknown(e)
            | Expr::IsNotUnknown(e) => self.operands([e.as_ref()]),
            Expr::IsDistinctFrom(a, b) | Expr::IsNotDistinctFrom(a, b) => {
                self.operands([a.as_ref(), b.as_ref()])
            }
            Expr::In {
                expr,
                target,
                global: false,
                ..
            } => {
                let mut parts = vec![self.operand(expr)?];
                match target {
                    InTarget::List(list) => parts.push(self.operands(list)?),
                    InTarget::Subquery(query) => {
                        let lineage = self.scalar_subquery(query)?;
                        self.consume(&lineage, UseKind::Expression)?;
                        parts.push(lineage);
                    }
                    InTarget::Unnest(_) | InTarget::Table { .. } => {
                        return unsupported("This IN form")
                    }
                }
                Ok(Lineage::derived(&parts))
            }
            Expr::Between {
                expr, low, high, ..
            } => self.operands([expr.as_ref(), low.as_ref(), high.as_ref()]),
            Expr::BinaryOp { left, op, right } => {
                check_binary_operator(op)?;
                self.operands([left.as_ref(), right.as_ref()])
            }
            Expr::Like {
                expr,
                pattern,
                escape_char,
                any: false,
                ..
            }
            | Expr::ILike {
                expr,
                pattern,
                escape_char,
                any: false,
                ..
            }
            | Expr::SimilarTo {
                expr,
                pattern,
                escape_char,
                ..
            } => self.operands(
                [expr.as_ref(), pattern.as_ref()]
                    .into_iter()
                    .chain(escape_char.as_deref()),
            ),
            Expr::AnyOp {
                left,
                compare_op,
                right,
                ..
            }
            | Expr::AllOp {
                left,
                compare_op,
                right,
            } => {
                check_binary_operator(compare_op)?;
                self.operands([left.as_ref(), right.as_ref()])
            }
            Expr::UnaryOp { op, expr } => {
                check_unary_operator(op)?;
                self.operands([expr.as_ref()])
            }
            Expr::Cast {
                kind,
                expr,
                data_type,
                format,
            } => {
                if !matches!(
                    kind,
                    sqlparser::ast::CastKind::Cast | sqlparser::ast::CastKind::DoubleColon
                ) || format.is_some()
                {
                    return unsupported("This cast form");
                }
                cast_target(data_type)?;
                self.operands([expr.as_ref()])
            }
            Expr::AtTimeZone {
                timestamp,
                time_zone,
            } => self.operands([timestamp.as_ref(), time_zone.as_ref()]),
            Expr::Extract { expr, .. } => {
                self.builtin("extract")?;
                self.operands([expr.as_ref()])
            }
            Expr::Ceil { expr, field } => self.ceil_floor("ceil", expr, field),
            Expr::Floor { expr, field } => self.ceil_floor("floor", expr, field),
            Expr::Position { expr, r#in } => {
                self.builtin("position")?;
                self.operands([expr.as_ref(), r#in.as_ref()])
            }
            Expr::Overlay {
                expr,
                overlay_what,
                overlay_from,
                overlay_for,
            } => {
                self.builtin("overlay")?;
                self.operands(
                    [expr.as_ref(), overlay_what.as_ref(), overlay_from.as_ref()]
                        .into_iter()
                        .chain(overlay_for.as_deref()),
                )
            }
            Expr::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                self.builtin("substring")?;
                self.operands(
                    [expr.as_ref()]
                        .into_iter()
                        .chain(substring_from.as_deref())
                        .chain(substring_for.as_deref()),
                )
            }
            Expr::Trim {
                expr,
                trim_what,
                trim_characters,
                ..
            } => {
                if trim_characters.is_some() {
                    return unsupported("TRIM with a character list");
                }
                self.builtin("trim")?;
                self.operands([expr.as_ref()].into_iter().chain(trim_what.as_deref()))
            }
            Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let mut exprs: Vec<&Expr> = operand.as_deref().into_iter().collect();
                for when in conditions {
                    exprs.push(&when.condition);
                    exprs.push(&when.result);
                }
                exprs.extend(else_result.as_deref());
                self.operands(exprs)
            }
            Expr::Tuple(items) => self.operands(items),
            Expr::Array(array) => self.operands(&array.elem),
            Expr::Interval(interval) => self.operands([interval.value.as_ref()]),
            Expr::Wildcard(_) | Expr::QualifiedWildcard(..) => {
                unsupported("A wildcard inside an expression")
            }
            Expr::GroupingSets(_) | Expr::Cube(_) | Expr::Rollup(_) => {
                unsupported("GROUPING SETS, CUBE or ROLLUP outside GROUP BY")
            }
            Expr::In { .. } | Expr::Like { .. } | Expr::ILike { .. } => {
                unsupported("This comparison form")
            }
            Expr::Collate { .. } => unsupported("COLLATE"),
            Expr::JsonAccess { .. }
            | Expr::IsJson { .. }
            | Expr::IsNormalized { .. }
            | Expr::RLike { .. }
            | Expr::Convert { .. }
            | Expr::Prefixed { .. }
            | Expr::Struct { .. }
            | Expr::Named { .. }
            | Expr::Dictionary(_)
            | Expr::Map(_)
            | Expr::MatchAgainst { .. }
            | Expr::OuterJoin(_)
            | Expr::Prior(_)
            | Expr::Lambda(_)
            | Expr::MemberOf(_) => unsupported("This expression form"),
        }
    }

    /// A column or whole-row reference.
    fn column(&mut self, parts: &[String]) -> Result<Lineage, SqlError> {
        match lookup(&self.levels, parts)? {
            Found::Column(lineage) | Found::WholeRow(lineage) => Ok(lineage),
        }
    }

    /// `(u).col` and `(u.*).col`: a field of a range variable's row.
    fn field_access(
        &mut self,
        root: &Expr,
        chain: &[sqlparser::ast::AccessExpr],
    ) -> Result<Lineage, SqlError> {
        use sqlparser::ast::{AccessExpr, Subscript};
        if let [AccessExpr::Dot(Expr::Identifier(field))] = chain {
            let mut base = root;
            while let Expr::Nested(inner) = base {
                base = inner;
            }
            let qualifier = match base {
                Expr::Identifier(ident) => {
                    let name = fold(ident)?;
                    // `(x).f`: PostgreSQL reads `x` as a column first (of any
                    // level) and as a row only when no column has that name.
                    if let Found::Column(_) = lookup(&self.levels, std::slice::from_ref(&name))? {
                        return unsupported("Field selection from a column value");
                    }
                    Some(vec![name])
                }
                Expr::QualifiedWildcard(name, _) => Some(fold_object_name(name)?),
                _ => None,
            };
            if let Some(mut parts) = qualifier {
                parts.push(fold(field)?);
                return self.column(&parts);
            }
            self.operand(root)?;
            return unsupported("Field selection from a computed value");
        }
        let mut parts = vec![self.operand(root)?];
        for access in chain {
            match access {
                AccessExpr::Subscript(Subscript::Index { index }) => {
                    parts.push(self.operand(index)?);
                }
                AccessExpr::Subscript(Subscript::Slice {
                    lower_bound,
                    upper_bound,
                    stride,
                }) => {
                    let bounds = lower_bound
                        .iter()
                        .chain(upper_bound.iter())
                        .chain(stride.iter());
                    parts.push(self.operands(bounds)?);
                }
                AccessExpr::Dot(_) => return unsupported("Field selection from a computed value"),
            }
        }
        Ok(Lineage::derived(&parts))
    }

    fn ceil_floor(
        &mut self,
        name: &str,
        expr: &Expr,
        field: &CeilFloorKind,
    ) -> Result<Lineage, SqlError> {
        if !matches!(
            field,
            CeilFloorKind::DateTimeField(DateTimeField::NoDateTime)
        ) {
            return unsupported("CEIL/FLOOR with a unit");
        }
        self.builtin(name)?;
        self.operands([expr])
    }

    /// Checks a syntactic built-in (EXTRACT, TRIM, ...) against the allowlist.
    pub(super) fn builtin(&mut self, name: &str) -> Result<(), SqlError> {
        let f = resolve_function(&[name.to_string()])
            .map_err(|r| SqlError::function_refused(name.to_string(), &r))?;
        if !f.deterministic {
            self.analysis.non_deterministic = true;
        }
        self.analysis.functions.insert(f.name.to_string());
        Ok(())
    }
}
