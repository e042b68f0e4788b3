//! Function calls: the allowlist check, argument rules, FILTER and OVER.
//!
//! Every call is looked up in [`crate::sql::functions`]; unknown names are
//! refused. Arguments must be scalar expressions (a whole-row value is
//! refused by `consume`). Set-returning functions take constants only.
//! `ARRAY(subquery)` is an expression, not a function, and is handled here
//! because the parser reports it as a call named `ARRAY`.

use sqlparser::ast::{
    DuplicateTreatment, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArgumentClause,
    FunctionArguments, UnaryOperator, Value, WindowFrameBound, WindowSpec, WindowType,
};

use super::{unsupported, Resolver};
use crate::sql::error::SqlError;
use crate::sql::functions::{lookup_qualified, FunctionKind};
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
        let Some(entry) = lookup_qualified(&parts) else {
            return Err(SqlError::FunctionNotAllowed { name: display() });
        };
        if call.uses_odbc_syntax
            || !matches!(call.parameters, FunctionArguments::None)
            || call.null_treatment.is_some()
            || !call.within_group.is_empty()
        {
            return unsupported("This function call form");
        }
        let misuse = |problem: &'static str, hint: &'static str| SqlError::FunctionMisuse {
            name: display(),
            problem,
            hint,
        };
        let is_aggregate = entry.kind == FunctionKind::Aggregate;
        match (entry.kind, &call.over) {
            (FunctionKind::Window, None) => {
                return Err(misuse("needs an OVER clause", "add OVER (...)"))
            }
            (FunctionKind::Scalar | FunctionKind::SetReturning, Some(_)) => {
                return Err(misuse("cannot take an OVER clause", "remove OVER (...)"))
            }
            _ => {}
        }
        if call.filter.is_some() && !is_aggregate {
            return Err(misuse("cannot take a FILTER clause", "remove FILTER (...)"));
        }
        if !entry.deterministic {
            self.analysis.non_deterministic = true;
        }
        self.analysis.functions.insert(entry.name.to_string());
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
                FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) => exprs.push(expr),
                FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if entry.name == "count" => {}
                FunctionArg::Unnamed(FunctionArgExpr::QualifiedWildcard(name)) => {
                    return Err(SqlError::WholeRowMisuse {
                        name: format!("{}.*", call_display(name)),
                    })
                }
                _ => return unsupported("A named or wildcard function argument"),
            }
        }
        if entry.kind == FunctionKind::SetReturning {
            self.set_returning_args(entry.name, &exprs)?;
            return Ok(Lineage::derived([]));
        }
        let mut parts = Vec::with_capacity(exprs.len());
        for expr in exprs {
            parts.push(self.operand(expr)?);
        }
        if let Some(filter) = &call.filter {
            self.predicate(filter, UseKind::Filter)?;
        }
        match &call.over {
            None | Some(WindowType::NamedWindow(_)) => {}
            Some(WindowType::WindowSpec(spec)) => self.window_spec(spec)?,
        }
        Ok(Lineage::derived(&parts))
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

    /// Set-returning functions run with constant arguments only (`generate_series(1, 10)`).
    pub(super) fn set_returning_args(
        &mut self,
        name: &str,
        args: &[&Expr],
    ) -> Result<(), SqlError> {
        if !(2..=3).contains(&args.len()) || !args.iter().all(|a| is_numeric_constant(a)) {
            return Err(SqlError::FunctionMisuse {
                name: name.to_string(),
                problem: "accepts only two or three constant numeric arguments",
                hint: "pass literal numbers such as generate_series(1, 10)",
            });
        }
        Ok(())
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

fn is_numeric_constant(expr: &Expr) -> bool {
    match expr {
        Expr::Value(v) => matches!(v.value, Value::Number(_, _)),
        Expr::Nested(inner) => is_numeric_constant(inner),
        Expr::UnaryOp {
            op: UnaryOperator::Minus | UnaryOperator::Plus,
            expr,
        } => is_numeric_constant(expr),
        _ => false,
    }
}

fn call_display(name: &sqlparser::ast::ObjectName) -> String {
    match fold_object_name(name) {
        Ok(parts) => display_name(&parts.iter().map(String::as_str).collect::<Vec<_>>()),
        Err(_) => "row".to_string(),
    }
}
