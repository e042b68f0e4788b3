//! The cast-target allowlist: built-in scalar, JSON, network, range, geometric and text
//! search types, and arrays of them.
//!
//! Casting to a composite type (`NULL::app.users`) names a relation, and a
//! user-defined type can run arbitrary input functions, so only the listed
//! built-in scalar types are accepted as `CAST`, `::` or typed-literal targets. The
//! allowlist is the list of names PostgreSQL records for them ([`pg_type_name`]).

use sqlparser::ast::DataType;

/// True when `data_type` is an allowlisted built-in type.
pub fn is_allowed_cast_target(data_type: &DataType) -> bool {
    pg_type_name(data_type).is_some()
}

/// The name PostgreSQL's grammar records for an allowlisted type (`int` → `int4`,
/// `varchar(10)` → `varchar`, `timestamptz` → `timestamptz`); `None` for every type
/// that is not on the allowlist. It is also the output name of an unnamed cast.
pub fn pg_type_name(data_type: &DataType) -> Option<&'static str> {
    use sqlparser::ast::{ArrayElemTypeDef, TimezoneInfo};
    let with_tz = |tz: &TimezoneInfo| matches!(tz, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz);
    Some(match data_type {
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => "int4",
        DataType::Int2(_) | DataType::SmallInt(_) => "int2",
        DataType::Int8(_) | DataType::BigInt(_) => "int8",
        DataType::Numeric(_) | DataType::Decimal(_) | DataType::Dec(_) => "numeric",
        DataType::Real | DataType::Float4 => "float4",
        DataType::Float8 | DataType::DoublePrecision => "float8",
        DataType::Text => "text",
        DataType::Varchar(_) | DataType::CharacterVarying(_) | DataType::CharVarying(_) => {
            "varchar"
        }
        DataType::Char(_) | DataType::Character(_) => "bpchar",
        DataType::Date => "date",
        DataType::Time(_, tz) if with_tz(tz) => "timetz",
        DataType::Time(_, _) => "time",
        DataType::Timestamp(_, tz) if with_tz(tz) => "timestamptz",
        DataType::Timestamp(_, _) => "timestamp",
        DataType::Interval { .. } => "interval",
        DataType::Bool | DataType::Boolean => "bool",
        DataType::JSON => "json",
        DataType::JSONB => "jsonb",
        DataType::Uuid => "uuid",
        // An array of an allowed type; PostgreSQL names the cast after the element type.
        DataType::Array(ArrayElemTypeDef::SquareBracket(inner, _)) => pg_type_name(inner)?,
        // Built-in types the parser knows only by name, unqualified (pg_catalog is searched
        // first) or qualified with pg_catalog.
        DataType::Custom(name, modifiers) if modifiers.is_empty() => named_builtin(name)?,
        _ => return None,
    })
}

/// Built-in types with input functions that read only their argument, reachable by name.
const NAMED_BUILTINS: &[&str] = &[
    "box",
    "cidr",
    "circle",
    "daterange",
    "inet",
    "int4range",
    "int8range",
    "lseg",
    "macaddr",
    "macaddr8",
    "numrange",
    "point",
    "tsquery",
    "tsrange",
    "tstzrange",
    "tsvector",
];

fn named_builtin(name: &sqlparser::ast::ObjectName) -> Option<&'static str> {
    let parts = crate::sql::ident::fold_object_name(name).ok()?;
    let bare = match parts.as_slice() {
        [bare] => bare,
        [schema, bare] if schema == crate::sql::catalog::PG_CATALOG => bare,
        _ => return None,
    };
    NAMED_BUILTINS.iter().copied().find(|b| b == bare)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn cast_type(sql_type: &str) -> Option<DataType> {
        let sql = format!("SELECT CAST(1 AS {sql_type})");
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, &sql).ok()?.pop()?;
        let sqlparser::ast::Statement::Query(q) = stmt else {
            return None;
        };
        let sqlparser::ast::SetExpr::Select(s) = *q.body else {
            return None;
        };
        match s.projection.first()? {
            sqlparser::ast::SelectItem::UnnamedExpr(sqlparser::ast::Expr::Cast {
                data_type,
                ..
            }) => Some(data_type.clone()),
            _ => None,
        }
    }

    #[test]
    fn cast_targets_table() {
        let cases = [
            ("int", true),
            ("bigint", true),
            ("numeric(10, 2)", true),
            ("text", true),
            ("varchar(10)", true),
            ("date", true),
            ("timestamp", true),
            ("boolean", true),
            ("app.users", false),
            ("regclass", false),
            ("json", true),
            ("jsonb", true),
            ("uuid", true),
            ("int[]", true),
            ("text[]", true),
            ("regclass[]", false),
            ("app.users[]", false),
            ("xml", false),
            ("inet", true),
            ("pg_catalog.int4range", true),
            ("app.inet", false),
            ("regconfig", false),
            ("\"INET\"", false),
        ];
        for (ty, allowed) in cases {
            let dt = cast_type(ty);
            assert!(dt.is_some(), "{ty} should parse");
            assert_eq!(
                dt.map(|d| is_allowed_cast_target(&d)),
                Some(allowed),
                "{ty}"
            );
        }
    }
}
