//! Typed refusals raised by the SQL pipeline (input, parse, classify, resolve).
//!
//! Every variant maps to a stable machine code and a [`SqlStage`]. The `Display`
//! text is a single sentence an agent can act on: it names the offending object
//! and says what to do instead. It never contains the raw SQL text, and names
//! echoed from the SQL are shortened by [`crate::sql::ident::display_name`].

use thiserror::Error;

/// The pipeline stage that raised an error; the decision layer maps it to its `Step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlStage {
    /// Text checks done before the parser sees the input.
    Input,
    /// Tokenizing and parsing.
    Parse,
    /// Statement-kind classification.
    Classify,
    /// Name, column, function and type resolution against the catalog.
    Resolve,
}

/// Why a statement was refused by the SQL layer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SqlError {
    #[error("The SQL text is {len} bytes, over the {max}-byte limit; send a shorter statement.")]
    TooLong { len: usize, max: usize },
    #[error("The SQL text contains a forbidden character ({what}) at byte {offset}; remove it and use plain ASCII whitespace.")]
    ForbiddenCharacter { what: &'static str, offset: usize },
    #[error(
        "Unicode-escaped identifiers (U&\"...\") are not accepted; write the identifier literally."
    )]
    UnicodeEscapedIdentifier,
    #[error("The numeric literal {literal} is not valid PostgreSQL 15 syntax; separate numbers from names with a space and use decimal numbers.")]
    NumericJunk { literal: String },
    #[error("Placeholder {placeholder} is not supported; use $1, $2, ... bound through the params array.")]
    Placeholder { placeholder: String },
    #[error("Parameter {placeholder} is not bound: {supplied} parameter(s) were supplied; pass a value for it in params.")]
    UnboundParameter {
        placeholder: String,
        supplied: usize,
    },
    #[error("The SQL text contains a NUL character ({spelling}); PostgreSQL text cannot hold NUL, so remove it or send binary data as bytea from params.")]
    NulCharacter { spelling: &'static str },
    #[error("The statement nests {depth} levels deep (operator chains, casts, parentheses, CASE and set operations), over the limit of {max}; split it into simpler statements.")]
    TooDeep { depth: usize, max: usize },
    #[error("The statement reads {count} relations, over the limit of {max} per statement; query fewer tables at once.")]
    TooManyRelations { count: usize, max: usize },
    #[error("{supplied} parameter(s) were supplied but the statement does not use {missing}; every value in params must be bound by its $n placeholder.")]
    UnusedParameter { missing: String, supplied: usize },
    #[error("The SQL could not be parsed ({detail}); send one plain PostgreSQL statement.")]
    Unparseable { detail: String },
    #[error("The input holds {count} statements; send exactly one statement per request.")]
    NotOneStatement { count: usize },
    #[error("{kind} is not allowed through this gateway; {hint}.")]
    ForbiddenStatement {
        kind: &'static str,
        hint: &'static str,
    },
    #[error("Data-modifying statements are only allowed at the top level of a query or in a top-level WITH; move the {kind} out of the subquery.")]
    NestedDml { kind: &'static str },
    #[error("Relation {name} does not exist on this source; check the name with describe access.")]
    UnknownRelation { name: String },
    #[error("Schema {schema} is not allowed here (temporary objects are never governed); use a table from the source's schemas.")]
    TempSchema { schema: String },
    #[error("Column {name} does not exist in the relations of this query; check the column list with describe access.")]
    UnknownColumn { name: String },
    #[error("Column reference {name} is ambiguous; qualify it with its table alias.")]
    AmbiguousColumn { name: String },
    #[error("Identifier {name} is longer than 63 bytes; use the exact, shorter name.")]
    IdentifierTooLong { name: String },
    #[error("Function {name} is refused (family {family}, why in docs/functions.md#{family}); instead, {instead}.")]
    FunctionNotAllowed {
        name: String,
        family: &'static str,
        instead: &'static str,
    },
    #[error("Function {name} {problem}; {hint}.")]
    FunctionMisuse {
        name: String,
        problem: &'static str,
        hint: &'static str,
    },
    #[error("Operator {name} is not allowed (only built-in pg_catalog operators are); use a standard operator.")]
    OperatorNotAllowed { name: String },
    #[error("Cast to type {name} is not allowed; cast only to built-in scalar types such as int, numeric, text, date, timestamp or boolean.")]
    CastNotAllowed { name: String },
    #[error("The whole-row value {name} may only appear as a plain select-list item; name the columns you need instead.")]
    WholeRowMisuse { name: String },
    #[error("{what} is not supported by the gateway; rewrite the query with plain SELECT syntax.")]
    Unsupported { what: String },
    #[error(
        "{what} has {got} columns but {expected} were expected; make the column counts match."
    )]
    ColumnCountMismatch {
        what: &'static str,
        got: usize,
        expected: usize,
    },
}

impl SqlError {
    /// The refusal of a call to `name`, naming its family and what to write instead.
    pub fn function_refused(name: String, refused: &crate::sql::functions::Refused) -> Self {
        SqlError::FunctionNotAllowed {
            name,
            family: refused.family.code(),
            instead: refused.alternative.unwrap_or("remove the call"),
        }
    }

    /// Stable snake_case key for machines (logs, wire errors, tests).
    pub fn code(&self) -> &'static str {
        match self {
            SqlError::TooLong { .. } => "sql_too_long",
            SqlError::ForbiddenCharacter { .. } => "sql_forbidden_character",
            SqlError::UnicodeEscapedIdentifier => "sql_unicode_escape",
            SqlError::NumericJunk { .. } => "sql_lexical_differential",
            SqlError::Placeholder { .. } => "sql_placeholder_not_allowed",
            SqlError::UnboundParameter { .. } => "sql_unbound_parameter",
            SqlError::UnusedParameter { .. } => "sql_parameter_mismatch",
            SqlError::NulCharacter { .. } => "sql_nul_character",
            SqlError::TooDeep { .. } => "sql_too_deep",
            SqlError::TooManyRelations { .. } => "sql_too_many_relations",
            SqlError::Unparseable { .. } => "sql_unparseable",
            SqlError::NotOneStatement { .. } => "sql_not_one_statement",
            SqlError::ForbiddenStatement { .. } | SqlError::NestedDml { .. } => {
                "sql_forbidden_statement"
            }
            SqlError::UnknownRelation { .. } | SqlError::TempSchema { .. } => {
                "sql_unknown_relation"
            }
            SqlError::UnknownColumn { .. } => "sql_unknown_column",
            SqlError::AmbiguousColumn { .. } => "sql_ambiguous_column",
            SqlError::IdentifierTooLong { .. } => "sql_identifier_too_long",
            SqlError::FunctionNotAllowed { .. } | SqlError::FunctionMisuse { .. } => {
                "sql_function_not_allowed"
            }
            SqlError::OperatorNotAllowed { .. } => "sql_operator_not_allowed",
            SqlError::CastNotAllowed { .. } => "sql_cast_not_allowed",
            SqlError::WholeRowMisuse { .. } => "sql_whole_row_misuse",
            SqlError::Unsupported { .. } => "sql_unsupported_syntax",
            SqlError::ColumnCountMismatch { .. } => "sql_column_count_mismatch",
        }
    }

    /// The stage that raised the error.
    pub fn stage(&self) -> SqlStage {
        match self {
            SqlError::TooLong { .. }
            | SqlError::NulCharacter { .. }
            | SqlError::ForbiddenCharacter { .. }
            | SqlError::UnicodeEscapedIdentifier => SqlStage::Input,
            SqlError::NumericJunk { .. }
            | SqlError::Placeholder { .. }
            | SqlError::UnboundParameter { .. }
            | SqlError::UnusedParameter { .. }
            | SqlError::TooDeep { .. }
            | SqlError::Unparseable { .. }
            | SqlError::NotOneStatement { .. } => SqlStage::Parse,
            SqlError::ForbiddenStatement { .. } | SqlError::NestedDml { .. } => SqlStage::Classify,
            SqlError::UnknownRelation { .. }
            | SqlError::TempSchema { .. }
            | SqlError::UnknownColumn { .. }
            | SqlError::AmbiguousColumn { .. }
            | SqlError::IdentifierTooLong { .. }
            | SqlError::FunctionNotAllowed { .. }
            | SqlError::FunctionMisuse { .. }
            | SqlError::OperatorNotAllowed { .. }
            | SqlError::CastNotAllowed { .. }
            | SqlError::WholeRowMisuse { .. }
            | SqlError::Unsupported { .. }
            | SqlError::TooManyRelations { .. }
            | SqlError::ColumnCountMismatch { .. } => SqlStage::Resolve,
        }
    }

    /// The HTTP status of the refusal: 400 for input the caller must fix in form
    /// (NUL, too deep, too many relations, parameters that do not match their
    /// placeholders), 403 for everything the governance rules refuse.
    pub fn status(&self) -> u16 {
        match self {
            SqlError::NulCharacter { .. }
            | SqlError::TooDeep { .. }
            | SqlError::TooManyRelations { .. }
            | SqlError::UnusedParameter { .. } => 400,
            _ => 403,
        }
    }

    /// Which rule refused, for the decision's `rule` field.
    pub fn rule(&self) -> &'static str {
        match self.stage() {
            SqlStage::Input => "input hygiene",
            SqlStage::Parse => match self {
                SqlError::TooDeep { .. } => "statement depth bound",
                SqlError::UnboundParameter { .. } | SqlError::UnusedParameter { .. } => {
                    "parameter binding"
                }
                _ => "single-statement parser",
            },
            SqlStage::Classify => "statement classifier",
            SqlStage::Resolve => match self {
                SqlError::FunctionNotAllowed { .. } | SqlError::FunctionMisuse { .. } => {
                    "function allowlist"
                }
                SqlError::OperatorNotAllowed { .. } => "operator allowlist",
                SqlError::CastNotAllowed { .. } => "cast type allowlist",
                SqlError::TooManyRelations { .. } => "relation count bound",
                SqlError::UnknownRelation { .. }
                | SqlError::TempSchema { .. }
                | SqlError::UnknownColumn { .. }
                | SqlError::AmbiguousColumn { .. } => "catalog resolution",
                _ => "query shape",
            },
        }
    }
}
