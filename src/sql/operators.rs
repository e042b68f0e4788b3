//! The operator allowlist and the cast check, next to the function and type
//! allowlists: the reviewed places that say what agent SQL may call.
//!
//! Built-in operators the parser knows are allowed. The explicit
//! `OPERATOR(schema.op)` form is allowed only for `pg_catalog`: a user-defined
//! operator can call any function.

use sqlparser::ast::{BinaryOperator, DataType, UnaryOperator};

use crate::sql::error::SqlError;
use crate::sql::types::is_allowed_cast_target;

/// Refuses a cast target that is not an allowlisted built-in scalar type.
pub fn cast_target(data_type: &DataType) -> Result<(), SqlError> {
    if is_allowed_cast_target(data_type) {
        Ok(())
    } else {
        let name: String = data_type.to_string().chars().take(40).collect();
        Err(SqlError::CastNotAllowed { name })
    }
}

pub fn is_comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
    )
}

/// Built-in operators are allowed; `OPERATOR(schema.op)` only for `pg_catalog`.
pub fn check_binary_operator(op: &BinaryOperator) -> Result<(), SqlError> {
    let allowed = match op {
        BinaryOperator::PGCustomBinaryOperator(parts) => {
            matches!(parts.as_slice(), [schema, _] if schema == crate::sql::catalog::PG_CATALOG)
        }
        BinaryOperator::Plus
        | BinaryOperator::Minus
        | BinaryOperator::Multiply
        | BinaryOperator::Divide
        | BinaryOperator::Modulo
        | BinaryOperator::StringConcat
        | BinaryOperator::Gt
        | BinaryOperator::Lt
        | BinaryOperator::GtEq
        | BinaryOperator::LtEq
        | BinaryOperator::Eq
        | BinaryOperator::NotEq
        | BinaryOperator::And
        | BinaryOperator::Or
        | BinaryOperator::BitwiseOr
        | BinaryOperator::BitwiseAnd
        | BinaryOperator::PGBitwiseXor
        | BinaryOperator::PGBitwiseShiftLeft
        | BinaryOperator::PGBitwiseShiftRight
        | BinaryOperator::PGExp
        | BinaryOperator::PGRegexMatch
        | BinaryOperator::PGRegexIMatch
        | BinaryOperator::PGRegexNotMatch
        | BinaryOperator::PGRegexNotIMatch
        | BinaryOperator::PGLikeMatch
        | BinaryOperator::PGILikeMatch
        | BinaryOperator::PGNotLikeMatch
        | BinaryOperator::PGNotILikeMatch
        | BinaryOperator::PGStartsWith
        // JSON, array, range and text search operators: built-in, over their operands only
        // (`?`, `?|` and `?&` never get here: the input stage refuses `?` as a placeholder).
        | BinaryOperator::Arrow
        | BinaryOperator::LongArrow
        | BinaryOperator::HashArrow
        | BinaryOperator::HashLongArrow
        | BinaryOperator::AtArrow
        | BinaryOperator::ArrowAt
        | BinaryOperator::AtAt
        | BinaryOperator::PGOverlap
        | BinaryOperator::Overlaps => true,
        _ => false,
    };
    if allowed {
        Ok(())
    } else {
        let name: String = op.to_string().chars().take(40).collect();
        Err(SqlError::OperatorNotAllowed { name })
    }
}

pub fn check_unary_operator(op: &UnaryOperator) -> Result<(), SqlError> {
    match op {
        UnaryOperator::Plus | UnaryOperator::Minus | UnaryOperator::Not | UnaryOperator::PGAbs => {
            Ok(())
        }
        other => Err(SqlError::OperatorNotAllowed {
            name: other.to_string(),
        }),
    }
}
