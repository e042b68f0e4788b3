//! The reviewed decision per function family: allowed or refused, and why.
//!
//! Every `pg_catalog` function falls into exactly one family (`classify` derives which
//! from `pg_proc`); a family's verdict and reason are written here once, reviewed once,
//! and rendered into `docs/functions.md`, which a refusal links to.

use serde::Serialize;

/// A family of functions sharing one verdict and one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    // Allowed: computation over the arguments and nothing else.
    String,
    Math,
    Datetime,
    Formatting,
    Conditional,
    Json,
    Array,
    Range,
    Network,
    Geometric,
    TextSearch,
    Binary,
    Enum,
    TypeConversion,
    OperatorFunction,
    Aggregate,
    OrderedSetAggregate,
    Window,
    SetReturning,
    Clock,
    Random,
    // Refused.
    NotInCatalogue,
    Procedure,
    SecurityDefiner,
    Internal,
    TypeIo,
    AggregateSupport,
    IndexSupport,
    SqlInString,
    Xml,
    Digest,
    Catalog,
    Session,
    Settings,
    Sequences,
    AdvisoryLocks,
    LargeObjects,
    Files,
    Delay,
    Statistics,
    Replication,
    ServerControl,
    SideEffects,
    Server,
    Unclassified,
}

impl Family {
    /// Every family, allowed first, in the order `docs/functions.md` lists them.
    pub const ALL: &'static [Family] = &[
        Family::String,
        Family::Math,
        Family::Datetime,
        Family::Formatting,
        Family::Conditional,
        Family::Json,
        Family::Array,
        Family::Range,
        Family::Network,
        Family::Geometric,
        Family::TextSearch,
        Family::Binary,
        Family::Enum,
        Family::TypeConversion,
        Family::OperatorFunction,
        Family::Aggregate,
        Family::OrderedSetAggregate,
        Family::Window,
        Family::SetReturning,
        Family::Clock,
        Family::Random,
        Family::NotInCatalogue,
        Family::Procedure,
        Family::SecurityDefiner,
        Family::Internal,
        Family::TypeIo,
        Family::AggregateSupport,
        Family::IndexSupport,
        Family::SqlInString,
        Family::Xml,
        Family::Digest,
        Family::Catalog,
        Family::Session,
        Family::Settings,
        Family::Sequences,
        Family::AdvisoryLocks,
        Family::LargeObjects,
        Family::Files,
        Family::Delay,
        Family::Statistics,
        Family::Replication,
        Family::ServerControl,
        Family::SideEffects,
        Family::Server,
        Family::Unclassified,
    ];

    /// The family's name in refusals, the access file and the docs.
    pub fn code(self) -> &'static str {
        match self {
            Family::String => "string",
            Family::Math => "math",
            Family::Datetime => "datetime",
            Family::Formatting => "formatting",
            Family::Conditional => "conditional",
            Family::Json => "json",
            Family::Array => "array",
            Family::Range => "range",
            Family::Network => "network",
            Family::Geometric => "geometric",
            Family::TextSearch => "text_search",
            Family::Binary => "binary",
            Family::Enum => "enum",
            Family::TypeConversion => "type_conversion",
            Family::Aggregate => "aggregate",
            Family::OrderedSetAggregate => "ordered_set_aggregate",
            Family::Window => "window",
            Family::SetReturning => "set_returning",
            Family::Clock => "clock",
            Family::Random => "random",
            Family::NotInCatalogue => "not_in_catalogue",
            Family::Procedure => "procedure",
            Family::SecurityDefiner => "security_definer",
            Family::Internal => "internal",
            Family::TypeIo => "type_io",
            Family::OperatorFunction => "operator_function",
            Family::AggregateSupport => "aggregate_support",
            Family::IndexSupport => "index_support",
            Family::SqlInString => "sql_in_string",
            Family::Xml => "xml",
            Family::Digest => "digest",
            Family::Catalog => "catalog",
            Family::Session => "session",
            Family::Settings => "settings",
            Family::Sequences => "sequences",
            Family::AdvisoryLocks => "advisory_locks",
            Family::LargeObjects => "large_objects",
            Family::Files => "files",
            Family::Delay => "delay",
            Family::Statistics => "statistics",
            Family::Replication => "replication",
            Family::ServerControl => "server_control",
            Family::SideEffects => "side_effects",
            Family::Server => "server",
            Family::Unclassified => "unclassified",
        }
    }

    /// Looks a family up by its code (the access file names families by code).
    pub fn from_code(code: &str) -> Option<Family> {
        Family::ALL.iter().copied().find(|f| f.code() == code)
    }

    /// Whether agent SQL may call the family's functions.
    pub fn allowed(self) -> bool {
        self < Family::NotInCatalogue
    }

    /// The reviewed reason for the verdict, one sentence.
    pub fn reason(self) -> &'static str {
        match self {
            Family::String => "text computed from the arguments alone (case, padding, splitting, regular expressions bounded by the statement timeout)",
            Family::Math => "numbers computed from the arguments alone",
            Family::Datetime => "dates, times and intervals computed from the arguments, in the source session's pinned time zone and date style",
            Family::Formatting => "values rendered to or parsed from text by a template given in the call",
            Family::Conditional => "a choice among the arguments (COALESCE, NULLIF, GREATEST, LEAST, counting NULLs)",
            Family::Json => "JSON built from, or read out of, the arguments",
            Family::Array => "arrays built from, or read out of, the arguments",
            Family::Range => "ranges and multiranges built from, or compared with, the arguments",
            Family::Network => "addresses and networks computed from the arguments",
            Family::Geometric => "geometry computed from the arguments",
            Family::TextSearch => "text search documents and queries built from the arguments; a configuration name only selects a server-wide dictionary",
            Family::Binary => "bytes and bit strings computed from the arguments (encodings, bit operations)",
            Family::Enum => "the labels of an enum type the argument already has; the labels are part of the schema describe access shows",
            Family::TypeConversion => "a cast written as a function call (date(ts), numeric(x)); the same conversion a cast performs",
            Family::Aggregate => "folds the rows the query already reads into one value",
            Family::OrderedSetAggregate => "folds the rows the query already reads in a given order (percentiles, mode, hypothetical rank)",
            Family::Window => "computed over the rows the query already reads, in a window it defines",
            Family::SetReturning => "rows computed from the arguments (series, array and JSON elements, regular expression matches); bounded by the row cap and the statement timeout",
            Family::Clock => "reads the clock; the result is never served from the cache",
            Family::Random => "draws from the session's random generator, which no other caller can set (setseed is refused); the result is never served from the cache",
            Family::NotInCatalogue => "not a reviewed PostgreSQL built-in: user-defined and extension functions can read any table, run any SQL or change anything, and the gateway cannot see inside them",
            Family::Procedure => "procedures may write or commit; they are never called from a read",
            Family::SecurityDefiner => "runs with its owner's rights rather than the caller's",
            Family::Internal => "part of the server's own machinery (it takes or returns internal or cstring values, is a trigger or handler, or applies a raw type modifier as a length coercion)",
            Family::TypeIo => "a type's binary input or output routine; a cast or the value itself does the job",
            Family::OperatorFunction => "the function behind a built-in operator (jsonb_extract_path_text for #>>, textcat for ||): the same computation over its arguments",
            Family::AggregateSupport => "a step of an aggregate (transition, final or combine function); call the aggregate itself",
            Family::IndexSupport => "an index access method's support routine (comparison, distance, and unkeyed hashing such as hashtext, refused for the digest family's reason); use the operator or ORDER BY",
            Family::SqlInString => "runs SQL given as a string, or reads a whole table, schema or database named in a string, past every table and column rule",
            Family::Xml => "the XML family mixes parsers with functions that read whole tables, schemas and databases by name; refused as a family",
            Family::Digest => "an unkeyed digest turns a sensitive value into a stable identifier anyone can reverse by dictionary; the gateway's hash mask gives keyed pseudonyms",
            Family::Catalog => "reads the system catalogs by name or object id (privileges, definitions, descriptions, sizes, visibility), which reveals what describe access does not",
            Family::Session => "reveals the server or the session rather than the arguments (users, addresses, versions, transaction ids, snapshots)",
            Family::Settings => "reads or changes a configuration setting; a changed setting would outlive the call on the pooled session",
            Family::Sequences => "advances or reveals a sequence; a sequence change is a write outside any transaction",
            Family::AdvisoryLocks => "takes or releases advisory locks, which can outlive the call and block other callers",
            Family::LargeObjects => "reads or writes large objects, which are not a governed resource",
            Family::Files => "reads server files or lists server directories",
            Family::Delay => "sleeps, holding a pooled connection and opening a timing side channel",
            Family::Statistics => "reads the server's activity and statistics counters, which describe other callers' work",
            Family::Replication => "manages or reads replication, slots, origins and the write-ahead log",
            Family::ServerControl => "signals backends, reloads or rotates configuration and logs, or controls backups and recovery",
            Family::SideEffects => "PostgreSQL marks it volatile or parallel-unsafe: it may change database or session state",
            Family::Server => "one of PostgreSQL's own server functions (pg_*); none is needed to analyse data",
            Family::Unclassified => "a function no reviewed rule recognises; refused until it is reviewed",
        }
    }

    /// An allowed way to do the family's job, where one exists.
    pub fn alternative(self) -> Option<&'static str> {
        Some(match self {
            Family::NotInCatalogue => "use a built-in from docs/functions.md",
            Family::TypeIo => "cast the value (x::text) instead",
            Family::AggregateSupport => "call the aggregate (sum, avg, …)",
            Family::IndexSupport => "compare with the operator, or sort with ORDER BY",
            Family::SqlInString => {
                "run the inner SELECT itself; json_agg(to_jsonb(t)) serialises rows"
            }
            Family::Xml => {
                "build the document with the json functions (json_build_object, json_agg)"
            }
            Family::Digest => "ask an operator for a hash mask on the column (a keyed pseudonym)",
            Family::Catalog => "call the describe access tool for tables, columns and grants",
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_unique_and_round_trip() {
        let mut seen = std::collections::HashSet::new();
        for f in Family::ALL {
            assert!(seen.insert(f.code()), "{}", f.code());
            assert_eq!(Family::from_code(f.code()), Some(*f));
            assert!(!f.reason().is_empty());
        }
        let mut sorted = Family::ALL.to_vec();
        sorted.sort();
        assert_eq!(sorted, Family::ALL, "ALL follows the declaration order");
        assert!(Family::Random.allowed() && !Family::NotInCatalogue.allowed());
    }
}
