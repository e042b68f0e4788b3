//! The facts a policy condition may read: three objects (`caller`, `request`, `statement`),
//! each a fixed set of typed fields. The checker ([`super::check`]) refuses any other name,
//! and [`super::facts`] fills exactly these fields for every call, so a condition that
//! applies can always be evaluated.
//!
//! Lists carry the most entries they may hold: the checker bounds a condition's cost with
//! them, and evaluation fails (closed) for a call whose list is longer.

/// The type of one fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FactType {
    Bool,
    Int,
    String,
    Timestamp,
    /// A list of strings of at most this many entries.
    Strings(usize),
    /// The token's claims: string keys, values of any JSON type.
    Claims,
    Object(&'static Object),
}

/// One field of a fact object.
#[derive(Debug, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub ty: FactType,
    pub doc: &'static str,
}

/// A fact object and its fields.
#[derive(Debug, PartialEq, Eq)]
pub struct Object {
    pub name: &'static str,
    pub fields: &'static [Field],
}

impl Object {
    pub fn field(&self, name: &str) -> Option<&'static Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    pub fn field_names(&self) -> Vec<&'static str> {
        self.fields.iter().map(|f| f.name).collect()
    }
}

/// Most entries of a claim's list value (longer ones leave `caller.claims` unusable).
pub const MAX_CLAIM_LIST: usize = 256;
/// Most tables a statement's table lists may hold.
pub const MAX_TABLES: usize = 64;
/// Most columns a statement's column lists may hold.
pub const MAX_COLUMNS: usize = 1024;

const fn field(name: &'static str, ty: FactType, doc: &'static str) -> Field {
    Field { name, ty, doc }
}

use FactType as T;

pub static CALLER: Object = Object {
    name: "caller",
    fields: &[
        field("identity", T::String, "the InterLock identity's name"),
        field("kind", T::String, "`agent`, `approver` or `operator`"),
        field("credential", T::String, "`api_key` or `oauth`"),
        field(
            "groups",
            T::Strings(MAX_CLAIM_LIST),
            "the access token's groups (`[oauth] roles_claim`); empty for an API key",
        ),
        field(
            "claims",
            T::Claims,
            "the access token's claims by name; empty for an API key",
        ),
        field(
            "roles",
            T::Strings(MAX_TABLES),
            "the roles the caller holds on the source",
        ),
    ],
};

pub static REQUEST: Object = Object {
    name: "request",
    fields: &[
        field(
            "tool",
            T::String,
            "the MCP tool called, e.g. `interlock_query`",
        ),
        field("source", T::String, "the source's id"),
        field(
            "adapter",
            T::String,
            "`mcp`, `mcp-legacy`, `proxy` or `stdio`",
        ),
        field(
            "dialect",
            T::String,
            "the MCP protocol version the call was served in; empty for the proxy API",
        ),
        field("time", T::Timestamp, "when the call arrived"),
        field(
            "zone",
            T::String,
            "the zone the local time facts are in (`[policy] time_zone`)",
        ),
        field("hour", T::Int, "the hour in the zone, 0–23"),
        field("minute", T::Int, "the minute in the zone, 0–59"),
        field(
            "weekday",
            T::Int,
            "the day of the week in the zone, 0 = Sunday … 6 = Saturday",
        ),
        field("date", T::String, "the date in the zone, `YYYY-MM-DD`"),
        field(
            "max_rows",
            T::Int,
            "the rows the caller asked for (`max_rows`); 0 when it asked for none",
        ),
    ],
};

pub static STATEMENT: Object = Object {
    name: "statement",
    fields: &[
        field("class", T::String, "`read` or `write`"),
        field("explain", T::Bool, "the statement is an EXPLAIN"),
        field("analyze", T::Bool, "the statement is an EXPLAIN ANALYZE"),
        field(
            "tables_read",
            T::Strings(MAX_TABLES),
            "`schema.table` of every relation read (views as named; CTEs and aliases resolved)",
        ),
        field(
            "columns_read",
            T::Strings(MAX_COLUMNS),
            "`schema.table.column` of every column used, through aliases, CTEs and subqueries",
        ),
        field(
            "columns_returned",
            T::Strings(MAX_COLUMNS),
            "`schema.table.column` of every column a result value derives from",
        ),
        field(
            "tables_written",
            T::Strings(MAX_TABLES),
            "`schema.table` of every relation written",
        ),
        field(
            "columns_written",
            T::Strings(MAX_COLUMNS),
            "`schema.table.column` of every column written",
        ),
        field("deletes_rows", T::Bool, "the statement deletes rows"),
        field(
            "functions",
            T::Strings(MAX_COLUMNS),
            "every function called, under both its names, bare and `pg_catalog.`-qualified (`lower` and `pg_catalog.lower`), so a rule may write either",
        ),
        field(
            "function_families",
            T::Strings(MAX_COLUMNS),
            "the catalogue family of every function called (`json`, `string`, … as in docs/functions.md), each once",
        ),
        field(
            "reads_clock",
            T::Bool,
            "the statement reads the clock (`now()`, …)",
        ),
        field(
            "row_cap",
            T::Int,
            "the rows a read may return before conditional rules: the lowest of the source's \
             cap, unconditional `max_rows` rules and the caller's `max_rows`; 0 for a write",
        ),
    ],
};

/// The planner's estimate of a read (cost admission, docs/cost-admission.md): known only
/// once the source has planned the statement, after the decision, so a rule whose
/// condition reads it is evaluated then, in the cost step, and may only deny the call or
/// hold it for approval.
pub static PLAN: Object = Object {
    name: "plan",
    fields: &[
        field(
            "cost",
            T::Int,
            "the planner's total cost of the read as it runs (row cap included), rounded up",
        ),
        field(
            "rows",
            T::Int,
            "the most rows any step of the plan is estimated to produce",
        ),
        field(
            "bytes",
            T::Int,
            "the most bytes (rows × width) any step of the plan is estimated to produce",
        ),
        field(
            "result_rows",
            T::Int,
            "the rows the read is estimated to return",
        ),
        field(
            "seq_scans",
            T::Strings(MAX_TABLES),
            "every relation the plan scans sequentially, `schema.table`",
        ),
    ],
};

/// The roots, by name.
pub static ROOTS: [&Object; 4] = [&CALLER, &REQUEST, &STATEMENT, &PLAN];

pub fn root(name: &str) -> Option<&'static Object> {
    ROOTS.iter().copied().find(|o| o.name == name)
}

/// The fact reference as Markdown (docs/policy-conditions.md quotes it; a test keeps the
/// two equal).
pub fn markdown() -> String {
    let mut out = String::new();
    for object in ROOTS {
        out.push_str(&format!(
            "\n| `{}.…` | type | meaning |\n|---|---|---|\n",
            object.name
        ));
        for f in object.fields {
            let ty = match f.ty {
                T::Bool => "bool".to_string(),
                T::Int => "int".to_string(),
                T::String => "string".to_string(),
                T::Timestamp => "timestamp".to_string(),
                T::Strings(n) => format!("list(string), ≤ {n}"),
                T::Claims => "map(string, dyn)".to_string(),
                T::Object(o) => o.name.to_string(),
            };
            out.push_str(&format!(
                "| `{}.{}` | {ty} | {} |\n",
                object.name, f.name, f.doc
            ));
        }
    }
    out
}
