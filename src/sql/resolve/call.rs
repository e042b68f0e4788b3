//! Function calls: the allowlist check, argument rules, FILTER and OVER.
//!
//! Every call is looked up in the function catalogue ([`crate::sql::functions`]); a name
//! outside it, or of a refused family, is refused naming the family. The call's form
//! (plain, OVER, WITHIN GROUP, FILTER) must be one the name takes. Arguments must be
//! expressions, positional or named (`name => value`); a whole row passed to a function
//! is read as a projected row is.
//! `ARRAY(subquery)` is an expression, not a function, and is handled here
//! because the parser reports it as a call named `ARRAY`.

use sqlparser::ast::{
    DuplicateTreatment, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgOperator,
    FunctionArgumentClause, FunctionArguments, WindowFrameBound, WindowSpec, WindowType,
};

use super::{unsupported, Resolver};
use crate::sql::error::SqlError;
use crate::sql::functions::{resolve, Kinds};
use crate::sql::ident::{display_name, fold_object_name};
use crate::sql::lineage::{Lineage, UseKind};

impl Resolver<'_> {
    /// Resolves a function call and returns the lineage of its result.
    pub(super) fn function(&mut self, call: &Function) -> Result<Lineage, SqlError> {
        let parts = fold_object_name(&call.name)?;
        if let (FunctionArguments::Subquery(query), [name]) = (&call.args, parts.as_slice()) {
            if name == "array" && call.name.0.len() == 1 && is_plain_call(call) {
                let lineage = self.scalar_subquery(query)?;
                self.consume(&lineage, UseKind::Expression)?;
                return Ok(Lineage::derived([&lineage]));
            }
        }
        let display = || display_name(&parts.iter().map(String::as_str).collect::<Vec<_>>());
        if is_grammar_type_name(call) {
            return Err(SqlError::FunctionMisuse {
                name: display(),
                problem: "is a type name in PostgreSQL's grammar, which reads name(…) as a type",
                hint: "cast instead (x::numeric, x::time)",
            });
        }
        let entry = resolve(&parts).map_err(|r| SqlError::function_refused(display(), &r))?;
        if call.uses_odbc_syntax
            || !matches!(call.parameters, FunctionArguments::None)
            || call.null_treatment.is_some()
        {
            return unsupported("This function call form");
        }
        let misuse = |problem: &'static str, hint: &'static str| SqlError::FunctionMisuse {
            name: display(),
            problem,
            hint,
        };
        let kinds = entry.kinds;
        let ordered = !call.within_group.is_empty();
        let form_ok = match (&call.over, ordered) {
            (Some(_), true) => false,
            (Some(_), false) => kinds.contains(Kinds::WINDOW) || kinds.contains(Kinds::AGGREGATE),
            (None, true) => kinds.contains(Kinds::ORDERED_SET),
            (None, false) => {
                kinds.contains(Kinds::SCALAR)
                    || kinds.contains(Kinds::SET_RETURNING)
                    || kinds.contains(Kinds::AGGREGATE)
            }
        };
        if !form_ok {
            return Err(match (&call.over, ordered) {
                (Some(_), _) => misuse("cannot take an OVER clause here", "remove OVER (...)"),
                (None, true) => misuse("does not take WITHIN GROUP", "remove WITHIN GROUP (...)"),
                (None, false) if kinds.contains(Kinds::ORDERED_SET) => misuse(
                    "needs WITHIN GROUP (ORDER BY ...) or OVER (...)",
                    "write e.g. percentile_cont(0.5) WITHIN GROUP (ORDER BY x)",
                ),
                (None, false) => misuse("needs an OVER clause", "add OVER (...)"),
            });
        }
        let is_aggregate = ordered || kinds.contains(Kinds::AGGREGATE);
        if call.filter.is_some() && !is_aggregate {
            return Err(misuse("cannot take a FILTER clause", "remove FILTER (...)"));
        }
        if !entry.deterministic {
            self.analysis.non_deterministic = true;
        }
        self.analysis.functions.insert(entry.name.to_string());
        for item in &call.within_group {
            let lineage = self.value(&item.expr)?;
            self.consume(&lineage, UseKind::Order)?;
        }
        let args = match &call.args {
            FunctionArguments::None => Vec::new(),
            FunctionArguments::Subquery(_) => {
                return unsupported("A subquery as function arguments")
            }
            FunctionArguments::List(list) => {
                if list.duplicate_treatment == Some(DuplicateTreatment::Distinct) && !is_aggregate {
                    return Err(misuse("cannot take DISTINCT", "remove DISTINCT"));
                }
                for clause in &list.clauses {
                    match clause {
                        FunctionArgumentClause::OrderBy(items) if is_aggregate => {
                            for item in items {
                                let lineage = self.value(&item.expr)?;
                                self.consume(&lineage, UseKind::Order)?;
                            }
                        }
                        _ => return unsupported("This function argument clause"),
                    }
                }
                list.args.iter().collect::<Vec<_>>()
            }
        };
        let mut exprs = Vec::with_capacity(args.len());
        for arg in args {
            match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(expr))
                | FunctionArg::Named {
                    arg: FunctionArgExpr::Expr(expr),
                    operator: FunctionArgOperator::RightArrow | FunctionArgOperator::Assignment,
                    ..
                } => exprs.push(expr),
                FunctionArg::ExprNamed {
                    name: Expr::Identifier(_),
                    arg: FunctionArgExpr::Expr(expr),
                    operator: FunctionArgOperator::RightArrow | FunctionArgOperator::Assignment,
                } => exprs.push(expr),
                FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if entry.name == "count" => {}
                FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(name)) => {
                    return Err(SqlError::WholeRowMisuse {
                        name: format!("{}.*", call_display(name)),
                    })
                }
                _ => return unsupported("A named or wildcard function argument"),
            }
        }
        let mut parts = Vec::with_capacity(exprs.len());
        for expr in exprs {
            // A whole row passed to a function (row_to_json(t), json_agg(t)) is read as if
            // it were projected: every column of it, under the rules a projected row obeys.
            let lineage = self.value(expr)?;
            let kind = if lineage.whole_row.is_some() {
                UseKind::Project
            } else {
                UseKind::Expression
            };
            self.consume(&lineage, kind)?;
            parts.push(lineage);
        }
        if let Some(filter) = &call.filter {
            self.predicate(filter, UseKind::Filter)?;
        }
        match &call.over {
            None | Some(WindowType::NamedWindow(_)) => {}
            Some(WindowType::WindowSpec(spec)) => self.window_spec(spec)?,
        }
        // The result is a value computed from the row, no longer the row itself.
        let mut result = Lineage::derived(&parts);
        result.whole_row = None;
        Ok(result)
    }

    /// Window PARTITION BY / ORDER BY keys and frame bounds.
    pub(super) fn window_spec(&mut self, spec: &WindowSpec) -> Result<(), SqlError> {
        for expr in &spec.partition_by {
            let lineage = self.value(expr)?;
            self.consume(&lineage, UseKind::Window)?;
        }
        for item in &spec.order_by {
            let lineage = self.value(&item.expr)?;
            self.consume(&lineage, UseKind::Window)?;
        }
        if let Some(frame) = &spec.window_frame {
            for bound in std::iter::once(&frame.start_bound).chain(frame.end_bound.as_ref()) {
                if let WindowFrameBound::Preceding(Some(expr))
                | WindowFrameBound::Following(Some(expr)) = bound
                {
                    self.operand(expr)?;
                }
            }
        }
        Ok(())
    }
}

/// Type names PostgreSQL's grammar reads before `(` as a type with a modifier
/// (`numeric(10)`), never as a function call, unless quoted: sqlparser reads a call.
const GRAMMAR_TYPE_NAMES: &[&str] = &[
    "bit",
    "char",
    "character",
    "dec",
    "decimal",
    "float",
    "interval",
    "national",
    "nchar",
    "numeric",
    "time",
    "timestamp",
    "varchar",
];

fn is_grammar_type_name(call: &Function) -> bool {
    match call.name.0.as_slice() {
        [part] => part.as_ident().is_some_and(|id| {
            id.quote_style.is_none()
                && GRAMMAR_TYPE_NAMES.contains(&id.value.to_ascii_lowercase().as_str())
        }),
        _ => false,
    }
}

fn is_plain_call(call: &Function) -> bool {
    !call.uses_odbc_syntax
        && matches!(call.parameters, FunctionArguments::None)
        && call.filter.is_none()
        && call.null_treatment.is_none()
        && call.over.is_none()
        && call.within_group.is_empty()
}

fn call_display(name: &sqlparser::ast::ObjectName) -> String {
    match fold_object_name(name) {
        Ok(parts) => display_name(&parts.iter().map(String::as_str).collect::<Vec<_>>()),
        Err(_) => "row".to_string(),
    }
}
