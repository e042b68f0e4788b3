//! Conditions (WHERE, JOIN ... ON, HAVING, FILTER, MERGE and ON CONFLICT
//! predicates).
//!
//! Boolean connectives and comparisons pass the caller's use kind straight to
//! their operands, so `email = 'x'` is a filter use of `email` — which a rule
//! with `allow_filter` tolerates — while `upper(email) = 'X'` is also an
//! expression use, which no rule tolerates. Anything else in a condition is
//! resolved as a value and consumed with the caller's kind.

use sqlparser::ast::{BinaryOperator, Expr, InTarget, UnaryOperator};

use super::Resolver;
use crate::sql::error::SqlError;
use crate::sql::lineage::UseKind;
use crate::sql::operators::is_comparison;

impl Resolver<'_> {
    /// A condition (WHERE, ON, HAVING, FILTER): comparison operands are `kind` uses.
    pub(super) fn predicate(&mut self, expr: &Expr, kind: UseKind) -> Result<(), SqlError> {
        match expr {
            Expr::Nested(inner) => self.predicate(inner, kind),
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => self.predicate(expr, kind),
            Expr::BinaryOp {
                left,
                op: BinaryOperator::And | BinaryOperator::Or,
                right,
            } => {
                self.predicate(left, kind)?;
                self.predicate(right, kind)
            }
            Expr::BinaryOp { left, op, right } if is_comparison(op) => {
                self.compared(&[left, right], kind)
            }
            Expr::IsNull(e) | Expr::IsNotNull(e) | Expr::IsTrue(e) | Expr::IsNotTrue(e) => {
                self.compared(&[e], kind)
            }
            Expr::IsFalse(e) | Expr::IsNotFalse(e) | Expr::IsUnknown(e) | Expr::IsNotUnknown(e) => {
                self.compared(&[e], kind)
            }
            Expr::IsDistinctFrom(a, b) | Expr::IsNotDistinctFrom(a, b) => {
                self.compared(&[a, b], kind)
            }
            Expr::Between {
                expr, low, high, ..
            } => self.compared(&[expr, low, high], kind),
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
            } => {
                self.compared(&[expr, pattern], kind)?;
                if let Some(escape) = escape_char {
                    self.operand(escape)?;
                }
                Ok(())
            }
            Expr::In {
                expr,
                target: InTarget::List(list),
                global: false,
                ..
            } => {
                self.compared(&[expr], kind)?;
                for item in list {
                    self.compared(&[item], kind)?;
                }
                Ok(())
            }
            Expr::In {
                expr,
                target: InTarget::Subquery(query),
                global: false,
                ..
            } => {
                self.compared(&[expr], kind)?;
                let lineage = self.scalar_subquery(query)?;
                self.consume(&lineage, kind)
            }
            Expr::Exists { subquery, .. } => self.query(subquery).map(|_| ()),
            other => {
                let lineage = self.value(other)?;
                self.consume(&lineage, kind)
            }
        }
    }

    fn compared(&mut self, exprs: &[&Expr], kind: UseKind) -> Result<(), SqlError> {
        for expr in exprs {
            let lineage = self.value(expr)?;
            self.consume(&lineage, kind)?;
        }
        Ok(())
    }
}
