//! The function allowlist: the one reviewed place that says which functions
//! agent SQL may call.
//!
//! Only built-in `pg_catalog` functions with no side effects, no access to
//! files, sessions, other databases or SQL hidden in strings are listed. A
//! name must match exactly after identifier folding (`"LOWER"` is not
//! `lower`), and may be qualified only with `pg_catalog`. Anything not listed
//! is refused, wherever it appears: select list, WHERE, FROM, inside EXPLAIN.
//! Syntactic forms the parser turns into dedicated nodes (`EXTRACT`,
//! `SUBSTRING(... FROM ...)`, `TRIM`, `CEIL`, `FLOOR`, `POSITION`, `OVERLAY`)
//! are checked under their function names here as well.
//!
//! Adding a function is a security review: it must take scalar arguments,
//! have no side effect, and reveal nothing beyond its arguments.

use serde::Serialize;

/// How a function is called and what it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FunctionKind {
    /// One value per row.
    Scalar,
    /// Folds rows into one value; may also be used as a window function.
    Aggregate,
    /// Only valid with `OVER (...)`.
    Window,
    /// Returns a set of rows; arguments must be constants.
    SetReturning,
}

/// One allowlisted function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AllowedFunction {
    /// The exact `pg_catalog` name.
    pub name: &'static str,
    pub kind: FunctionKind,
    /// False when the result depends on the clock or the session, so a cached
    /// result must not be reused.
    pub deterministic: bool,
}

const fn f(name: &'static str, kind: FunctionKind, deterministic: bool) -> AllowedFunction {
    AllowedFunction {
        name,
        kind,
        deterministic,
    }
}

use FunctionKind::{Aggregate, Scalar, SetReturning, Window};

/// The allowlist. Keep it sorted by group; every entry is reviewed.
pub const ALLOWED_FUNCTIONS: &[AllowedFunction] = &[
    // string
    f("lower", Scalar, true),
    f("upper", Scalar, true),
    f("length", Scalar, true),
    f("char_length", Scalar, true),
    f("substr", Scalar, true),
    f("substring", Scalar, true),
    f("trim", Scalar, true),
    f("btrim", Scalar, true),
    f("ltrim", Scalar, true),
    f("rtrim", Scalar, true),
    f("replace", Scalar, true),
    f("repeat", Scalar, true),
    f("concat", Scalar, true),
    // conditional
    f("coalesce", Scalar, true),
    f("nullif", Scalar, true),
    f("greatest", Scalar, true),
    f("least", Scalar, true),
    // numeric
    f("abs", Scalar, true),
    f("round", Scalar, true),
    f("floor", Scalar, true),
    f("ceil", Scalar, true),
    f("ceiling", Scalar, true),
    f("mod", Scalar, true),
    // date/time: the clock readers make a result non-cacheable
    f("now", Scalar, false),
    f("current_date", Scalar, false),
    f("current_timestamp", Scalar, false),
    f("current_time", Scalar, false),
    f("localtimestamp", Scalar, false),
    f("localtime", Scalar, false),
    f("date_trunc", Scalar, true),
    f("extract", Scalar, true),
    f("date_part", Scalar, true),
    // aggregate
    f("count", Aggregate, true),
    f("sum", Aggregate, true),
    f("avg", Aggregate, true),
    f("min", Aggregate, true),
    f("max", Aggregate, true),
    f("string_agg", Aggregate, true),
    f("array_agg", Aggregate, true),
    // window
    f("row_number", Window, true),
    f("rank", Window, true),
    f("dense_rank", Window, true),
    f("lag", Window, true),
    f("lead", Window, true),
    // set-returning (constant arguments only)
    f("generate_series", SetReturning, true),
];

/// Looks up an already-folded function name; `None` means refuse.
pub fn lookup(name: &str) -> Option<&'static AllowedFunction> {
    ALLOWED_FUNCTIONS.iter().find(|f| f.name == name)
}

/// Resolves a folded, possibly qualified name (`[schema.]name`) to an entry.
pub fn lookup_qualified(parts: &[String]) -> Option<&'static AllowedFunction> {
    match parts {
        [name] => lookup(name),
        [schema, name] if schema == crate::sql::catalog::PG_CATALOG => lookup(name),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowlist_lookups() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let cases: &[(&[&str], bool)] = &[
            (&["lower"], true),
            (&["pg_catalog", "lower"], true),
            (&["app", "lower"], false),
            (&["LOWER"], false),
            (&["md5"], false),
            (&["pg_read_file"], false),
            (&["pg_catalog", "pg_read_file"], false),
            (&["nextval"], false),
            (&["row_to_json"], false),
            (&["generate_series"], true),
        ];
        for (parts, allowed) in cases {
            assert_eq!(lookup_qualified(&s(parts)).is_some(), *allowed, "{parts:?}");
        }
    }

    #[test]
    fn clock_functions_are_non_deterministic() {
        for name in ["now", "current_date", "current_timestamp"] {
            assert_eq!(lookup(name).map(|f| f.deterministic), Some(false), "{name}");
        }
        assert_eq!(lookup("lower").map(|f| f.deterministic), Some(true));
    }
}
