//! The rules that derive a function's family from PostgreSQL's own description of it
//! (`pg_proc` and the catalogs that name a function's role: operators, casts, aggregates,
//! types, index support). `tests/function_catalogue.rs` reads those rows from a live
//! server, runs [`classify`], and compares the result with the checked-in catalogue.
//!
//! Rules apply per overload, first match wins, most specific first: what a function can do
//! (procedure, definer rights, internal types, known side-effect names, catalog and session
//! types, volatility) decides before what it computes (its role, kind and argument types).
//! A name's family is then the first refused family among its overloads, or, when every
//! overload is allowed, the first allowed one in [`Family::ALL`] order.

use std::collections::BTreeMap;

use super::{Family, Kinds};

/// A type as `pg_type` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    pub name: String,
    /// `typtype`: b base, c composite, d domain, e enum, p pseudo, r range, m multirange.
    pub typtype: char,
    /// `typcategory`: A array, D date/time, N numeric, S string, …
    pub category: char,
}

/// One `pg_proc` row with what the other catalogs say about its oid.
#[derive(Debug, Clone)]
pub struct ProcRow {
    pub name: String,
    /// `prokind`: f function, a aggregate, w window, p procedure.
    pub kind: char,
    /// `pg_aggregate.aggkind`: n normal, o ordered-set, h hypothetical-set.
    pub agg_kind: Option<char>,
    /// `provolatile`: i, s, v.
    pub volatility: char,
    /// `proparallel`: s, r, u.
    pub parallel: char,
    pub returns_set: bool,
    pub security_definer: bool,
    /// Input argument types (`proargtypes`).
    pub args: Vec<TypeInfo>,
    pub result: TypeInfo,
    /// Names of OUT and TABLE parameters: a set-returning function's columns.
    pub out_columns: Vec<String>,
    /// A SQL-language body that reads a catalog, a table or a setting.
    pub body_reads_catalog: bool,
    /// `pg_operator.oprcode` names it.
    pub implements_operator: bool,
    /// `pg_cast.castfunc` names it for a cast between two types.
    pub casts: bool,
    /// `pg_cast.castfunc` names it for a length coercion (a type to itself, with a raw type
    /// modifier as its second argument).
    pub length_coercion: bool,
    /// `pg_aggregate` names it as a transition, final, combine or (de)serial step.
    pub aggregate_step: bool,
    /// `pg_type` names it as an input, output, send, receive, typmod or analyze routine.
    pub type_routine: bool,
    /// `pg_amproc` names it as an index support routine (comparison and hashing routines
    /// are refused; documented functions an index also uses, like isempty, are not).
    pub index_support: bool,
}

/// One classified name: what the generated catalogue holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub name: String,
    pub family: Family,
    pub kinds: Kinds,
    pub deterministic: bool,
    /// For set-returning names: `Some(columns)` (empty for one value per row), `None` when
    /// the caller must define the record's columns.
    pub output: Option<Vec<String>>,
    /// Why a reviewed exception overrides the rules, if one does.
    pub exception: Option<&'static str>,
}

/// Names whose family the rules would get wrong, each with its reviewed reason.
pub const EXCEPTIONS: &[(&str, Family, &str)] = &[
    ("age", Family::Datetime, "age(timestamp[, timestamp]) is date arithmetic; the age(xid) overload needs an xid, which no allowed cast, column or function yields (read as a clock reader: age(ts) counts from today)"),
    ("pg_size_bytes", Family::Formatting, "parses a size such as '10 MB' into bytes; reads nothing"),
    ("pg_size_pretty", Family::Formatting, "formats a number of bytes as '10 MB'; reads nothing"),
    ("pi", Family::Math, "a constant"),
    ("unnest", Family::SetReturning, "unnest(anyarray) yields one value per row; the unnest(tsvector) overload yields three columns, which the gateway does not expect: such a result is refused by the width check before any row is sent"),
];

/// Grammar forms that are not `pg_proc` rows: the parser turns them into their own nodes.
pub const SYNTAX_FORMS: &[(&str, Family, bool)] = &[
    ("coalesce", Family::Conditional, true),
    ("current_date", Family::Clock, false),
    ("current_time", Family::Clock, false),
    ("current_timestamp", Family::Clock, false),
    ("greatest", Family::Conditional, true),
    ("least", Family::Conditional, true),
    ("localtime", Family::Clock, false),
    ("localtimestamp", Family::Clock, false),
    ("nullif", Family::Conditional, true),
    ("trim", Family::String, true),
];

/// Functions whose result depends on the clock although PostgreSQL marks them stable.
const CLOCK_READERS: &[&str] = &[
    "age",
    "clock_timestamp",
    "now",
    "statement_timestamp",
    "timeofday",
    "transaction_timestamp",
];

/// Volatile functions that change no state another call can observe.
const RANDOM: &[&str] = &["gen_random_uuid", "random", "random_normal"];

/// Functions that run SQL given as a string or read whole objects named in a string.
const SQL_IN_STRING: &[&str] = &[
    "cursor_to_xml",
    "cursor_to_xmlschema",
    "database_to_xml",
    "database_to_xml_and_xmlschema",
    "database_to_xmlschema",
    "query_to_xml",
    "query_to_xml_and_xmlschema",
    "query_to_xmlschema",
    "schema_to_xml",
    "schema_to_xml_and_xmlschema",
    "schema_to_xmlschema",
    "table_to_xml",
    "table_to_xml_and_xmlschema",
    "table_to_xmlschema",
    "ts_rewrite",
    "ts_stat",
];

const SEQUENCES: &[&str] = &["currval", "lastval", "nextval", "setval"];
const SETTINGS: &[&str] = &["current_setting", "set_config"];
const DIGESTS: &[&str] = &["md5", "sha224", "sha256", "sha384", "sha512"];
const FORMATTING: &[&str] = &["format", "to_char", "to_date", "to_number", "to_timestamp"];
const CONDITIONAL: &[&str] = &["num_nonnulls", "num_nulls"];

/// Catalog readers whose argument and result types look innocent (text, name, int).
const CATALOG_NAMES: &[&str] = &[
    "col_description",
    "format_type",
    "obj_description",
    "pg_has_role",
    "row_security_active",
    "shobj_description",
];

/// Session facts behind innocent types.
const SESSION_NAMES: &[&str] = &[
    "current_database",
    "current_query",
    "current_schema",
    "current_schemas",
    "current_user",
    "getdatabaseencoding",
    "getpgusername",
    "inet_client_addr",
    "inet_client_port",
    "inet_server_addr",
    "inet_server_port",
    "session_user",
    "user",
    "version",
];

const SERVER_CONTROL: &[&str] = &[
    "pg_backup_start",
    "pg_backup_stop",
    "pg_cancel_backend",
    "pg_create_restore_point",
    "pg_import_system_collations",
    "pg_log_backend_memory_contexts",
    "pg_promote",
    "pg_reload_conf",
    "pg_rotate_logfile",
    "pg_terminate_backend",
];

/// Types whose values name catalog objects or expose the server's internals.
const CATALOG_TYPES: &[&str] = &[
    "aclitem",
    "oid",
    "oidvector",
    "pg_dependencies",
    "pg_mcv_list",
    "pg_ndistinct",
    "pg_node_tree",
    "regclass",
    "regcollation",
    "regnamespace",
    "regoper",
    "regoperator",
    "regproc",
    "regprocedure",
    "regrole",
    "regtype",
    "refcursor",
];

/// Types whose values are transaction, snapshot or tuple identifiers.
const SESSION_TYPES: &[&str] = &["cid", "pg_snapshot", "tid", "txid_snapshot", "xid", "xid8"];

/// Pseudo-types only the server's machinery passes.
const INTERNAL_TYPES: &[&str] = &[
    "cstring",
    "event_trigger",
    "fdw_handler",
    "index_am_handler",
    "internal",
    "language_handler",
    "pg_ddl_command",
    "table_am_handler",
    "trigger",
    "tsm_handler",
];

/// The family of one overload. `empty_value`: it takes no argument but returns what the
/// name's other overloads build (`json_build_object()`, `int4multirange()`), so it is the
/// empty value of a constructor, not a reading of the server or session.
fn overload_family(p: &ProcRow, empty_value: bool) -> Family {
    let name = p.name.as_str();
    let types = || p.args.iter().chain(std::iter::once(&p.result));
    // An array type is named after its element with a leading underscore (`_oid`).
    let has_type = |set: &[&str]| {
        types().any(|t| {
            set.contains(&t.name.as_str()) || set.contains(&t.name.trim_start_matches('_'))
        })
    };
    let is = |set: &[&str]| set.contains(&name);
    let pg = name.starts_with("pg_");
    if p.kind == 'p' {
        return Family::Procedure;
    }
    if p.security_definer {
        return Family::SecurityDefiner;
    }
    if has_type(INTERNAL_TYPES) || p.length_coercion {
        return Family::Internal;
    }
    if is(SQL_IN_STRING) {
        return Family::SqlInString;
    }
    if is(SEQUENCES) {
        return Family::Sequences;
    }
    if is(SETTINGS) {
        return Family::Settings;
    }
    if name.starts_with("pg_advisory") || name.starts_with("pg_try_advisory") {
        return Family::AdvisoryLocks;
    }
    if name.starts_with("lo_") || name == "loread" || name == "lowrite" {
        return Family::LargeObjects;
    }
    if pg && (name.starts_with("pg_ls_") || name.contains("_file") || name.contains("file_")) {
        return Family::Files;
    }
    if name.starts_with("pg_sleep") {
        return Family::Delay;
    }
    if name.starts_with("pg_stat") {
        return Family::Statistics;
    }
    if matches!(p.kind, 'a' | 'w')
        && !pg
        && !name.contains("xml")
        && p.volatility != 'v'
        && p.parallel != 'u'
    {
        // Aggregates and window functions only compare and combine the values the query
        // already reads, whatever their type: max(oid) looks nothing up.
        return match (p.kind, p.agg_kind) {
            ('a', Some('o' | 'h')) => Family::OrderedSetAggregate,
            ('a', _) => Family::Aggregate,
            _ => Family::Window,
        };
    }
    if pg
        && (name.contains("replication")
            || name.contains("wal")
            || name.contains("lsn")
            || name.contains("logical"))
        || has_type(&["pg_lsn"])
    {
        return Family::Replication;
    }
    if is(SERVER_CONTROL) {
        return Family::ServerControl;
    }
    if has_type(&["xml"]) || name.contains("xml") || name.starts_with("xpath") {
        return Family::Xml;
    }
    if is(DIGESTS) {
        return Family::Digest;
    }
    if is(CATALOG_NAMES)
        || (name.starts_with("has_") && name.ends_with("_privilege"))
        || name.starts_with("to_reg")
        || has_type(CATALOG_TYPES)
        || p.body_reads_catalog
    {
        return Family::Catalog;
    }
    if is(SESSION_NAMES) || name.starts_with("txid_") || has_type(SESSION_TYPES) {
        return Family::Session;
    }
    if is(RANDOM) {
        return Family::Random;
    }
    if is(CLOCK_READERS) {
        return Family::Clock;
    }
    if p.volatility == 'v' || p.parallel == 'u' {
        return Family::SideEffects;
    }
    if pg {
        return Family::Server;
    }
    if p.args.is_empty() && !empty_value {
        // Nothing to compute from: whatever it returns comes from the server or session.
        return Family::Session;
    }
    if p.type_routine || (name.ends_with("send") && p.result.name == "bytea") {
        return Family::TypeIo;
    }
    if p.implements_operator {
        return Family::OperatorFunction;
    }
    if p.aggregate_step {
        return Family::AggregateSupport;
    }
    let support_routine = ["cmp", "hash", "compress", "in_range"]
        .iter()
        .any(|part| name.contains(part));
    if p.index_support && support_routine {
        return Family::IndexSupport;
    }
    if p.casts {
        return Family::TypeConversion;
    }
    if p.returns_set {
        return Family::SetReturning;
    }
    if is(FORMATTING) {
        return Family::Formatting;
    }
    if is(CONDITIONAL) {
        return Family::Conditional;
    }
    family_by_types(p)
}

/// A pure function's family by what it computes over: the most specific family any of its
/// argument or result types belongs to (text, arrays and numbers last: most functions take
/// or return them).
fn family_by_types(p: &ProcRow) -> Family {
    let of = |t: &TypeInfo| match (t.name.as_str(), t.typtype, t.category) {
        ("json" | "jsonb" | "jsonpath", _, _) => Some(Family::Json),
        ("tsvector" | "tsquery" | "regconfig" | "regdictionary" | "gtsvector", _, _) => {
            Some(Family::TextSearch)
        }
        ("anyenum", _, _) | (_, 'e', _) => Some(Family::Enum),
        ("anyrange" | "anymultirange" | "anycompatiblerange" | "anycompatiblemultirange", _, _)
        | (_, 'r' | 'm', _) => Some(Family::Range),
        ("inet" | "cidr" | "macaddr" | "macaddr8", _, _) => Some(Family::Network),
        (_, _, 'G') => Some(Family::Geometric),
        (_, _, 'D' | 'T') => Some(Family::Datetime),
        ("anyarray" | "anycompatiblearray", _, _) | (_, _, 'A') => Some(Family::Array),
        ("bytea" | "bit" | "varbit", _, _) => Some(Family::Binary),
        (_, _, 'N') => Some(Family::Math),
        (_, _, 'S') => Some(Family::String),
        _ => None,
    };
    let rank = |f: Family| match f {
        Family::Json => 0,
        Family::TextSearch => 1,
        Family::Enum => 2,
        Family::Range => 3,
        Family::Network => 4,
        Family::Geometric => 5,
        Family::Datetime => 6,
        Family::Binary => 7,
        Family::String => 8,
        Family::Array => 9,
        _ => 10,
    };
    p.args
        .iter()
        .chain(std::iter::once(&p.result))
        .filter_map(of)
        .min_by_key(|f| rank(*f))
        .unwrap_or(Family::Unclassified)
}

/// The kind an overload contributes to its name.
fn overload_kinds(p: &ProcRow) -> Kinds {
    match (p.kind, p.agg_kind) {
        ('a', Some('o' | 'h')) => Kinds::ORDERED_SET,
        ('a', _) => Kinds::AGGREGATE,
        ('w', _) => Kinds::WINDOW,
        _ if p.returns_set => Kinds::SET_RETURNING,
        _ => Kinds::SCALAR,
    }
}

/// Classifies every name of `rows` (all overloads of a name together), adds the grammar
/// forms, and returns the catalogue sorted by name.
pub fn classify(rows: &[ProcRow]) -> Vec<Classified> {
    let mut by_name: BTreeMap<&str, Vec<&ProcRow>> = BTreeMap::new();
    for row in rows {
        by_name.entry(row.name.as_str()).or_default().push(row);
    }
    let mut out: Vec<Classified> = by_name
        .into_iter()
        .map(|(name, overloads)| classify_name(name, &overloads))
        .collect();
    for (name, family, deterministic) in SYNTAX_FORMS {
        if !out.iter().any(|c| c.name == *name) {
            out.push(Classified {
                name: (*name).to_string(),
                family: *family,
                kinds: Kinds::SCALAR,
                deterministic: *deterministic,
                output: None,
                exception: None,
            });
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn classify_name(name: &str, overloads: &[&ProcRow]) -> Classified {
    let builds = |p: &ProcRow| {
        overloads
            .iter()
            .any(|o| !o.args.is_empty() && o.result.name == p.result.name)
    };
    let families: Vec<Family> = overloads
        .iter()
        .map(|p| overload_family(p, p.args.is_empty() && builds(p)))
        .collect();
    let refused = families.iter().copied().find(|f| !f.allowed());
    let ruled = refused.unwrap_or_else(|| {
        families
            .iter()
            .copied()
            .min()
            .unwrap_or(Family::Unclassified)
    });
    let exception = EXCEPTIONS.iter().find(|(n, _, _)| *n == name);
    let family = exception.map_or(ruled, |(_, f, _)| *f);
    let kinds = overloads
        .iter()
        .fold(Kinds::from_bits(0), |k, p| k.union(overload_kinds(p)));
    let deterministic = !(CLOCK_READERS.contains(&name)
        || RANDOM.contains(&name)
        || overloads.iter().any(|p| p.volatility == 'v'));
    let output = kinds.contains(Kinds::SET_RETURNING).then(|| {
        let sets: Vec<&&ProcRow> = overloads.iter().filter(|p| p.returns_set).collect();
        let first = sets
            .first()
            .map(|p| p.out_columns.clone())
            .unwrap_or_default();
        let record = sets
            .iter()
            .any(|p| p.result.name == "record" && p.out_columns.is_empty());
        let agree = sets.iter().all(|p| p.out_columns == first);
        match (record, agree, exception.is_some()) {
            (false, true, _) => Some(first),
            // Overloads disagree on their columns: one value per row only where reviewed.
            (false, false, true) => Some(Vec::new()),
            _ => None,
        }
    });
    Classified {
        name: name.to_string(),
        family,
        kinds,
        deterministic,
        output: output.flatten(),
        exception: exception.map(|(_, _, why)| *why),
    }
}
