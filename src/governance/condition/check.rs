//! The checker run when an access file is applied: every name a condition reads is a
//! declared fact ([`super::schema`]), every operator and function is applied to the types
//! it takes, the result is a bool, and the cost of evaluating it is bounded. CEL as such
//! is dynamically typed; this pass is what lets a wrong field name or a type mismatch be
//! refused before a rule is live, naming where it is.
//!
//! Cost is an upper bound in evaluation steps: one per node, and a comprehension (`all`,
//! `exists`, `exists_one`, `filter`, `map`) costs its body once per entry its range can
//! hold (the bounds of the schema's lists).

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use super::schema;
use super::types::Ty;

/// The most evaluation steps a condition may cost (see the module docs).
pub const MAX_COST: u64 = 20_000;
/// The deepest nesting of a condition's expression.
pub const MAX_DEPTH: usize = 48;

/// Why a condition was refused: the message and the node it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckError {
    pub node: u64,
    pub message: String,
}

fn err<T>(node: &IdedExpr, message: impl Into<String>) -> Result<T, CheckError> {
    Err(CheckError {
        node: node.id,
        message: message.into(),
    })
}

/// A checked condition's result type (always bool) and its cost bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    pub cost: u64,
    /// The condition reads `plan.…` (known only once the source planned the read).
    pub reads_plan: bool,
}

/// Checks a parsed condition.
pub fn check(root: &IdedExpr) -> Result<Checked, CheckError> {
    let mut checker = Checker {
        scopes: Vec::new(),
        depth: 0,
        reads_plan: false,
    };
    let (ty, cost) = checker.expr(root)?;
    match ty {
        Ty::Bool => {}
        Ty::Dyn => {
            return err(
                root,
                "the condition's value is only known at evaluation; compare it, e.g. `caller.claims.admin == true`",
            )
        }
        other => return err(root, format!("a condition must be a bool, not {other}")),
    }
    if cost > MAX_COST {
        return err(
            root,
            format!(
                "the condition could take {cost} evaluation steps, more than the {MAX_COST} allowed; iterate over fewer or shorter lists"
            ),
        );
    }
    Ok(Checked {
        cost,
        reads_plan: checker.reads_plan,
    })
}

struct Checker {
    /// Comprehension variables in scope, innermost last.
    scopes: Vec<(String, Ty)>,
    depth: usize,
    reads_plan: bool,
}

type Typed = (Ty, u64);

impl Checker {
    fn expr(&mut self, e: &IdedExpr) -> Result<Typed, CheckError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return err(
                e,
                format!("the condition nests deeper than {MAX_DEPTH} levels"),
            );
        }
        let typed = self.expr_inner(e);
        self.depth -= 1;
        typed
    }

    fn expr_inner(&mut self, e: &IdedExpr) -> Result<Typed, CheckError> {
        match &e.expr {
            Expr::Literal(l) => Ok((literal(l), 1)),
            Expr::Ident(name) => self.ident(e, name),
            Expr::Select(s) => {
                let (operand, cost) = self.expr(&s.operand)?;
                let ty = select(e, &operand, &s.field, s.test)?;
                Ok((ty, cost + 1))
            }
            Expr::List(list) => {
                if !list.optional_indices.is_empty() {
                    return err(e, "optional list elements are not supported");
                }
                let mut elem = Ty::Dyn;
                let mut same = true;
                let mut cost = 1;
                for item in &list.elements {
                    let (t, c) = self.expr(item)?;
                    cost += c;
                    match elem.unify(&t) {
                        Some(u) if same => elem = u,
                        _ => same = false,
                    }
                }
                let elem = if same { elem } else { Ty::Dyn };
                Ok((Ty::List(Box::new(elem), list.elements.len()), cost))
            }
            Expr::Map(map) => {
                let mut cost = 1;
                let (mut key, mut value) = (Ty::Dyn, Ty::Dyn);
                for entry in &map.entries {
                    let EntryExpr::MapEntry(m) = &entry.expr else {
                        return err(e, "message literals are not supported");
                    };
                    if m.optional {
                        return err(e, "optional map entries are not supported");
                    }
                    let (k, kc) = self.expr(&m.key)?;
                    let (v, vc) = self.expr(&m.value)?;
                    cost += kc + vc;
                    key = key.unify(&k).unwrap_or(Ty::Dyn);
                    value = value.unify(&v).unwrap_or(Ty::Dyn);
                }
                Ok((
                    Ty::Map(Box::new(key), Box::new(value), map.entries.len()),
                    cost,
                ))
            }
            Expr::Struct(_) => err(e, "message literals are not supported"),
            Expr::Comprehension(c) => self.comprehension(e, c),
            Expr::Call(call) => self.call(e, call),
            Expr::Unspecified => err(e, "an empty expression"),
        }
    }

    fn ident(&mut self, e: &IdedExpr, name: &str) -> Result<Typed, CheckError> {
        if let Some((_, ty)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Ok((ty.clone(), 1));
        }
        match schema::root(name) {
            Some(object) => {
                self.reads_plan |= std::ptr::eq(object, &schema::PLAN);
                Ok((Ty::Object(object), 1))
            }
            None => err(
                e,
                format!(
                    "unknown fact {name:?}; a condition reads caller.…, request.…, statement.… and plan.…"
                ),
            ),
        }
    }

    fn comprehension(&mut self, e: &IdedExpr, c: &ComprehensionExpr) -> Result<Typed, CheckError> {
        let (range, range_cost) = self.expr(&c.iter_range)?;
        let bound = range.bound() as u64;
        let (first, second) = match &range {
            Ty::List(elem, _) => match c.iter_var2 {
                Some(_) => (Ty::Int, Some((**elem).clone())),
                None => ((**elem).clone(), None),
            },
            Ty::Map(k, v, _) => ((**k).clone(), c.iter_var2.as_ref().map(|_| (**v).clone())),
            Ty::Dyn => (Ty::Dyn, c.iter_var2.as_ref().map(|_| Ty::Dyn)),
            other => {
                return err(
                    e,
                    format!("only a list or a map can be iterated, not {other}"),
                )
            }
        };
        let (init, init_cost) = self.expr(&c.accu_init)?;
        // An accumulated list holds at most one entry per entry of the range.
        let accu = match init {
            Ty::List(elem, _) => Ty::List(elem, range.bound()),
            other => other,
        };
        let base = self.scopes.len();
        self.scopes.push((c.iter_var.clone(), first));
        if let (Some(name), Some(ty)) = (&c.iter_var2, second) {
            self.scopes.push((name.clone(), ty));
        }
        self.scopes.push((c.accu_var.clone(), accu.clone()));
        let body = (|| {
            let (_, cond_cost) = self.expr(&c.loop_cond)?;
            let (step, step_cost) = self.expr(&c.loop_step)?;
            let accu = match (accu.unify(&step), &accu) {
                (Some(Ty::List(elem, _)), _) => Ty::List(elem, range.bound()),
                (Some(t), _) => t,
                (None, a) => {
                    return err(
                        e,
                        format!("the step of this macro changes its result from {a} to {step}"),
                    )
                }
            };
            if let Some(slot) = self.scopes.last_mut() {
                slot.1 = accu;
            }
            let (result, result_cost) = self.expr(&c.result)?;
            Ok((result, cond_cost + step_cost, result_cost))
        })();
        self.scopes.truncate(base);
        let (result, per_entry, result_cost) = body?;
        let cost = range_cost
            .saturating_add(init_cost)
            .saturating_add(bound.saturating_mul(per_entry.saturating_add(1)))
            .saturating_add(result_cost);
        Ok((result, cost))
    }

    fn call(&mut self, e: &IdedExpr, call: &CallExpr) -> Result<Typed, CheckError> {
        let mut cost = 1u64;
        let target = match &call.target {
            Some(t) => {
                let (ty, c) = self.expr(t)?;
                cost += c;
                Some(ty)
            }
            None => None,
        };
        let mut args = Vec::with_capacity(call.args.len());
        for a in &call.args {
            let (ty, c) = self.expr(a)?;
            cost += c;
            args.push(ty);
        }
        let name = call.func_name.as_str();
        let ty = match target {
            Some(target) => member(e, name, &target, &args, &call.args)?,
            None => {
                let (ty, extra) = global(e, name, &args, &call.args)?;
                cost += extra;
                ty
            }
        };
        Ok((ty, cost))
    }
}

/// `root.field` when `e` selects a field of a fact root (`statement.class`).
fn fact_path(e: &IdedExpr) -> Option<String> {
    let Expr::Select(s) = &e.expr else {
        return None;
    };
    let Expr::Ident(root) = &s.operand.expr else {
        return None;
    };
    schema::root(root)?;
    Some(format!("{root}.{}", s.field))
}

fn literal(l: &LiteralValue) -> Ty {
    match l {
        LiteralValue::Boolean(_) => Ty::Bool,
        LiteralValue::Bytes(_) => Ty::Bytes,
        LiteralValue::Double(_) => Ty::Double,
        LiteralValue::Int(_) => Ty::Int,
        LiteralValue::Null => Ty::Null,
        LiteralValue::String(_) => Ty::String,
        LiteralValue::UInt(_) => Ty::Uint,
    }
}

fn select(e: &IdedExpr, operand: &Ty, field: &str, test: bool) -> Result<Ty, CheckError> {
    let ty = match operand {
        Ty::Object(object) => match object.field(field) {
            Some(f) => Ty::of_fact(f.ty),
            None => {
                return err(
                    e,
                    format!(
                        "unknown fact {}.{field}; {} has {}",
                        object.name,
                        object.name,
                        object.field_names().join(", ")
                    ),
                )
            }
        },
        Ty::Map(key, value, _) if key.compatible(&Ty::String) => (**value).clone(),
        Ty::Dyn => Ty::Dyn,
        other => return err(e, format!("{other} has no field {field:?}")),
    };
    Ok(if test { Ty::Bool } else { ty })
}

fn is_numeric(t: &Ty) -> bool {
    matches!(t, Ty::Int | Ty::Uint | Ty::Double | Ty::Dyn)
}

fn is_ordered(t: &Ty) -> bool {
    matches!(
        t,
        Ty::Int
            | Ty::Uint
            | Ty::Double
            | Ty::String
            | Ty::Timestamp
            | Ty::Duration
            | Ty::Bool
            | Ty::Dyn
    )
}

fn want_bool(e: &IdedExpr, what: &str, t: &Ty) -> Result<(), CheckError> {
    match t {
        Ty::Bool | Ty::Dyn => Ok(()),
        other => err(e, format!("{what} takes bools, not {other}")),
    }
}

/// A string literal argument, for functions whose argument is checked when applied.
fn literal_string(args: &[IdedExpr], i: usize) -> Option<&str> {
    match args.get(i).map(|a| &a.expr) {
        Some(Expr::Literal(LiteralValue::String(s))) => Some(s.as_ref()),
        _ => None,
    }
}

/// Operators and global functions: the result type and any cost beyond one step.
fn global(
    e: &IdedExpr,
    name: &str,
    args: &[Ty],
    raw: &[IdedExpr],
) -> Result<(Ty, u64), CheckError> {
    use cel::common::ast::operators as op;
    let arity = |n: usize| -> Result<(), CheckError> {
        if args.len() == n {
            Ok(())
        } else {
            err(
                e,
                format!(
                    "{} takes {n} argument(s), not {}",
                    display(name),
                    args.len()
                ),
            )
        }
    };
    let ty = match name {
        op::LOGICAL_AND | op::LOGICAL_OR => {
            arity(2)?;
            want_bool(e, display(name), &args[0])?;
            want_bool(e, display(name), &args[1])?;
            Ty::Bool
        }
        op::LOGICAL_NOT | op::NOT_STRICTLY_FALSE => {
            arity(1)?;
            want_bool(e, display(name), &args[0])?;
            Ty::Bool
        }
        op::EQUALS | op::NOT_EQUALS => {
            arity(2)?;
            if !args[0].compatible(&args[1]) {
                return err(e, format!("{} and {} cannot be equal; compare values of one type", args[0], args[1]));
            }
            for (fact, value) in [(0, 1), (1, 0)] {
                let fact = raw.get(fact).and_then(fact_path);
                if let (Some(fact), Some(value)) = (fact, literal_string(raw, value)) {
                    if let Some(why) = super::domains::never_equal(&fact, value) {
                        return err(e, why);
                    }
                }
            }
            Ty::Bool
        }
        op::LESS | op::LESS_EQUALS | op::GREATER | op::GREATER_EQUALS => {
            arity(2)?;
            if !(is_ordered(&args[0]) && args[0].compatible(&args[1])) {
                return err(e, format!("{} cannot be ordered against {}", args[0], args[1]));
            }
            Ty::Bool
        }
        op::NEGATE => {
            arity(1)?;
            match &args[0] {
                t @ (Ty::Int | Ty::Double | Ty::Duration | Ty::Dyn) => t.clone(),
                other => return err(e, format!("{other} cannot be negated")),
            }
        }
        op::ADD => {
            arity(2)?;
            match (&args[0], &args[1]) {
                (Ty::List(a, n), Ty::List(b, m)) => match a.unify(b) {
                    Some(t) => Ty::List(Box::new(t), n + m),
                    None => Ty::List(Box::new(Ty::Dyn), n + m),
                },
                (Ty::Timestamp, Ty::Duration) | (Ty::Duration, Ty::Timestamp) => Ty::Timestamp,
                (a, b) if a.compatible(b)
                    && matches!(a.unify(b), Some(Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Duration | Ty::Dyn)) =>
                {
                    a.unify(b).unwrap_or(Ty::Dyn)
                }
                (a, b) => return err(e, format!("{a} and {b} cannot be added")),
            }
        }
        op::SUBSTRACT => {
            arity(2)?;
            match (&args[0], &args[1]) {
                (Ty::Timestamp, Ty::Timestamp) => Ty::Duration,
                (Ty::Timestamp, Ty::Duration) => Ty::Timestamp,
                (a, b) if a.compatible(b) && (is_numeric(a) || *a == Ty::Duration) => {
                    a.unify(b).unwrap_or(Ty::Dyn)
                }
                (a, b) => return err(e, format!("{b} cannot be subtracted from {a}")),
            }
        }
        op::MULTIPLY | op::DIVIDE | op::MODULO => {
            arity(2)?;
            let (a, b) = (&args[0], &args[1]);
            if !(is_numeric(a) && a.compatible(b)) {
                return err(e, format!("{} needs numbers of one type, not {a} and {b}", display(name)));
            }
            a.unify(b).unwrap_or(Ty::Dyn)
        }
        op::CONDITIONAL => {
            arity(3)?;
            want_bool(e, "a condition (?:)", &args[0])?;
            match args[1].unify(&args[2]) {
                Some(t) => t,
                None => return err(e, format!("both branches of ?: must have one type, not {} and {}", args[1], args[2])),
            }
        }
        op::INDEX => {
            arity(2)?;
            match (&args[0], &args[1]) {
                (Ty::List(elem, _), Ty::Int | Ty::Uint | Ty::Dyn) => (**elem).clone(),
                (Ty::Map(k, v, _), key) if k.compatible(key) => (**v).clone(),
                (Ty::Dyn, _) => Ty::Dyn,
                (a, b) => return err(e, format!("{a} cannot be indexed by {b}")),
            }
        }
        op::IN => {
            arity(2)?;
            let ok = match &args[1] {
                Ty::List(elem, _) => elem.compatible(&args[0]),
                Ty::Map(k, _, _) => k.compatible(&args[0]),
                Ty::Dyn => true,
                _ => false,
            };
            if !ok {
                return err(e, format!("`in` looks for a {} in a list or map of them, not in {}", args[0], args[1]));
            }
            if let (Some(value), Some(fact)) = (literal_string(raw, 0), raw.get(1).and_then(fact_path)) {
                if let Some(why) = super::domains::never_element(&fact, value) {
                    return err(e, why);
                }
            }
            return Ok((Ty::Bool, args[1].bound() as u64));
        }
        "size" => {
            arity(1)?;
            sized(e, &args[0])?;
            Ty::Int
        }
        "int" | "uint" | "double" | "string" => {
            arity(1)?;
            let ok = matches!(
                (name, &args[0]),
                (_, Ty::Dyn | Ty::Int | Ty::Uint | Ty::Double | Ty::String)
                    | ("int" | "string", Ty::Timestamp)
                    | ("string", Ty::Bool | Ty::Bytes | Ty::Duration)
            );
            if !ok {
                return err(e, format!("{name}() cannot convert {}", args[0]));
            }
            match name {
                "int" => Ty::Int,
                "uint" => Ty::Uint,
                "double" => Ty::Double,
                _ => Ty::String,
            }
        }
        "dyn" => {
            arity(1)?;
            Ty::Dyn
        }
        "timestamp" | "duration" => {
            arity(1)?;
            let Some(text) = literal_string(raw, 0) else {
                return err(e, format!("{name}() takes a string literal"));
            };
            if name == "timestamp" {
                chrono::DateTime::parse_from_rfc3339(text).map_err(|why| CheckError {
                    node: e.id,
                    message: format!("timestamp({text:?}) is not an RFC 3339 time: {why}"),
                })?;
                Ty::Timestamp
            } else {
                if !is_duration(text) {
                    return err(e, format!("duration({text:?}) is not a duration like \"90m\" or \"1h30m\""));
                }
                Ty::Duration
            }
        }
        other => {
            return err(
                e,
                format!("unknown function {other}(); see docs/policy-conditions.md for those a condition may call"),
            )
        }
    };
    Ok((ty, 0))
}

fn sized(e: &IdedExpr, t: &Ty) -> Result<(), CheckError> {
    match t {
        Ty::String | Ty::Bytes | Ty::List(..) | Ty::Map(..) | Ty::Dyn => Ok(()),
        other => err(e, format!("{other} has no size")),
    }
}

/// Methods: `target.name(args)`.
fn member(
    e: &IdedExpr,
    name: &str,
    target: &Ty,
    args: &[Ty],
    raw: &[IdedExpr],
) -> Result<Ty, CheckError> {
    let string_target = matches!(target, Ty::String | Ty::Dyn);
    match name {
        "contains" | "startsWith" | "endsWith" => {
            if !string_target
                || args.len() != 1
                || !args[0].compatible(&Ty::String)
                || args[0] == Ty::Null
            {
                return err(e, format!("{name}() is a method of a string taking one string, e.g. caller.identity.{name}(\"ci-\")"));
            }
            Ok(Ty::Bool)
        }
        "matches" => {
            if !string_target || args.len() != 1 {
                return err(e, "matches() is a method of a string taking one pattern");
            }
            let Some(pattern) = literal_string(raw, 0) else {
                return err(
                    e,
                    "matches() takes a string literal pattern (checked when the file is applied)",
                );
            };
            regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .map_err(|why| CheckError {
                    node: e.id,
                    message: format!("matches({pattern:?}) is not a valid pattern: {why}"),
                })?;
            Ok(Ty::Bool)
        }
        "size" if args.is_empty() => {
            sized(e, target)?;
            Ok(Ty::Int)
        }
        "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds" | "getDayOfWeek"
        | "getDayOfMonth" | "getDate" | "getDayOfYear" | "getMonth" | "getFullYear" => {
            let on_duration = matches!(
                name,
                "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds"
            );
            match target {
                Ty::Timestamp | Ty::Dyn => {}
                Ty::Duration if on_duration && args.is_empty() => return Ok(Ty::Int),
                other => {
                    return err(
                        e,
                        format!("{name}() is a method of a timestamp, not of {other}"),
                    )
                }
            }
            match args.len() {
                0 => Ok(Ty::Int),
                1 => {
                    let Some(zone) = literal_string(raw, 0) else {
                        return err(
                            e,
                            format!("{name}() takes a time zone literal, e.g. \"Europe/Berlin\""),
                        );
                    };
                    if zone.parse::<chrono_tz::Tz>().is_err() && !is_offset(zone) {
                        return err(
                            e,
                            format!("{zone:?} is not a time zone (an IANA name or ±HH:MM)"),
                        );
                    }
                    Ok(Ty::Int)
                }
                n => err(e, format!("{name}() takes at most one argument, not {n}")),
            }
        }
        other => err(e, format!("unknown method {other}() on {target}")),
    }
}

/// `90m`, `1h30m`, `1.5h`, `-30s`, `250ms`: what CEL's `duration()` reads.
fn is_duration(text: &str) -> bool {
    let body = text.strip_prefix('-').unwrap_or(text);
    if body == "0" {
        return true;
    }
    let mut rest = body;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 || rest[..digits].matches('.').count() > 1 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ns", "us", "µs", "ms", "h", "m", "s"]
            .into_iter()
            .find(|u| rest.starts_with(u));
        let Some(unit) = unit else { return false };
        rest = &rest[unit.len()..];
        parts += 1;
    }
    parts > 0
}

fn is_offset(zone: &str) -> bool {
    let body = zone.strip_prefix(['+', '-']).unwrap_or(zone);
    let bytes = body.as_bytes();
    bytes.len() == 5
        && bytes[2] == b':'
        && body[..2].parse::<u8>().is_ok_and(|h| h < 24)
        && body[3..].parse::<u8>().is_ok_and(|m| m < 60)
}

/// How an operator is written, for messages.
fn display(name: &str) -> &str {
    use cel::common::ast::operators as op;
    match name {
        op::LOGICAL_AND => "&&",
        op::LOGICAL_OR => "||",
        op::LOGICAL_NOT => "!",
        op::MULTIPLY => "*",
        op::DIVIDE => "/",
        op::MODULO => "%",
        other => other,
    }
}
