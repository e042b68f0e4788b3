//! The differential test's schema: a small shop whose names collide on purpose.
//!
//! Tables are named like columns of other tables (`email`, `status`, `country`), columns
//! are named like tables (`email.customers`) and like their own table (`status.status`),
//! and a second schema repeats table names with other columns (`other.orders.email`).
//! Every table ends with a `pad` column that the generator never names: the privilege
//! oracle grants it so that a relation read without any column (`count(*)`) is allowed,
//! exactly as PostgreSQL requires SELECT on at least one column.

/// A column type, as far as the generator cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Int,
    Text,
}

impl Ty {
    pub fn sql(self) -> &'static str {
        match self {
            Ty::Int => "integer",
            Ty::Text => "text",
        }
    }
}

/// One table of the schema.
pub struct Table {
    pub schema: &'static str,
    pub name: &'static str,
    pub columns: &'static [(&'static str, Ty)],
    pub primary_key: Option<&'static str>,
}

/// The column every table ends with; never referenced by generated SQL.
pub const PAD: &str = "pad";

pub const TABLES: &[Table] = &[
    Table {
        schema: "public",
        name: "customers",
        columns: &[
            ("id", Ty::Int),
            ("name", Ty::Text),
            ("email", Ty::Text),
            ("country", Ty::Text),
            (PAD, Ty::Int),
        ],
        primary_key: Some("id"),
    },
    Table {
        schema: "public",
        name: "orders",
        columns: &[
            ("id", Ty::Int),
            ("customer_id", Ty::Int),
            ("status", Ty::Text),
            ("total", Ty::Int),
            ("note", Ty::Text),
            (PAD, Ty::Int),
        ],
        primary_key: Some("id"),
    },
    Table {
        schema: "public",
        name: "email",
        columns: &[
            ("id", Ty::Int),
            ("address", Ty::Text),
            ("customers", Ty::Int),
            ("status", Ty::Text),
            (PAD, Ty::Int),
        ],
        primary_key: None,
    },
    Table {
        schema: "public",
        name: "status",
        columns: &[
            ("status", Ty::Text),
            ("id", Ty::Int),
            ("name", Ty::Text),
            (PAD, Ty::Int),
        ],
        primary_key: None,
    },
    Table {
        schema: "public",
        name: "country",
        columns: &[
            ("code", Ty::Text),
            ("name", Ty::Text),
            ("email", Ty::Text),
            (PAD, Ty::Int),
        ],
        primary_key: None,
    },
    Table {
        schema: "other",
        name: "orders",
        columns: &[("id", Ty::Int), ("email", Ty::Text), (PAD, Ty::Int)],
        primary_key: None,
    },
];

/// The search path of the source (and of every oracle session).
pub const SEARCH_PATH: &str = "public";

/// The role the privilege oracle switches to.
pub const PROBE_ROLE: &str = "diff_probe";

/// DDL for the schema, a few rows, and the probe role.
pub fn ddl() -> String {
    let mut sql = String::from("CREATE SCHEMA other;\n");
    for t in TABLES {
        let cols: Vec<String> = t
            .columns
            .iter()
            .map(|(n, ty)| {
                let pk = if t.primary_key == Some(*n) {
                    " PRIMARY KEY"
                } else {
                    ""
                };
                format!("{n} {}{pk}", ty.sql())
            })
            .collect();
        sql.push_str(&format!(
            "CREATE TABLE {}.{} ({});\n",
            t.schema,
            t.name,
            cols.join(", ")
        ));
        for row in 1..=3 {
            let vals: Vec<String> = t
                .columns
                .iter()
                .map(|(n, ty)| match ty {
                    Ty::Int => row.to_string(),
                    Ty::Text => format!("'{}.{}.{n}#{row}'", t.schema, t.name),
                })
                .collect();
            sql.push_str(&format!(
                "INSERT INTO {}.{} VALUES ({});\n",
                t.schema,
                t.name,
                vals.join(", ")
            ));
        }
    }
    sql.push_str("ANALYZE;\n");
    sql.push_str(&format!(
        "DO $$ BEGIN
           IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{PROBE_ROLE}') THEN
             CREATE ROLE {PROBE_ROLE} NOLOGIN;
           END IF;
         END $$;
         GRANT USAGE ON SCHEMA public, other TO {PROBE_ROLE};\n"
    ));
    sql
}

/// The table `schema.name`, if it is part of the schema.
pub fn table(schema: &str, name: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.schema == schema && t.name == name)
}
