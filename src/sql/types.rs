//! The cast-target allowlist: built-in scalar types only.
//!
//! Casting to a composite type (`NULL::app.users`) names a relation, and a
//! user-defined type can run arbitrary input functions, so only the listed
//! built-in scalar types are accepted as `CAST`, `::` or typed-literal targets.

use sqlparser::ast::DataType;

/// True when `data_type` is an allowlisted built-in scalar type.
pub fn is_allowed_cast_target(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Int(_)
            | DataType::Integer(_)
            | DataType::Int2(_)
            | DataType::Int4(_)
            | DataType::Int8(_)
            | DataType::SmallInt(_)
            | DataType::BigInt(_)
            | DataType::Numeric(_)
            | DataType::Decimal(_)
            | DataType::Dec(_)
            | DataType::Real
            | DataType::Float4
            | DataType::Float8
            | DataType::DoublePrecision
            | DataType::Text
            | DataType::Varchar(_)
            | DataType::CharacterVarying(_)
            | DataType::CharVarying(_)
            | DataType::Char(_)
            | DataType::Character(_)
            | DataType::Date
            | DataType::Time(_, _)
            | DataType::Timestamp(_, _)
            | DataType::Interval { .. }
            | DataType::Bool
            | DataType::Boolean
    )
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
            ("json", false),
            ("int[]", false),
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
