//! The fixture catalog and policy of `testdata/sql-safety` (schema.sql, policy.md),
//! expressed with the product's own types.
#![allow(dead_code)]

pub mod corpus;

use interlock::governance::{
    AccessProfile, MaskStrategy, Policy, PolicyRule, RedactionRule, SourceRole,
};
use interlock::sql::{Catalog, CatalogColumn, CatalogRelation, RelationKind};

fn relation(name: &str, kind: RelationKind, columns: &[(&str, &str)]) -> CatalogRelation {
    CatalogRelation {
        schema: "app".to_string(),
        name: name.to_string(),
        kind,
        columns: columns
            .iter()
            .map(|(n, t)| CatalogColumn {
                name: n.to_string(),
                data_type: t.to_string(),
            })
            .collect(),
    }
}

/// The relations of schema.sql, columns in attnum order; search_path = app.
pub fn fixture_catalog() -> Catalog {
    use RelationKind::*;
    Catalog::new(
        vec![
            relation(
                "users",
                Table,
                &[("id", "integer"), ("email", "text"), ("ssn", "text")],
            ),
            relation("t1", Table, &[("id", "integer"), ("val", "text")]),
            relation(
                "events",
                PartitionedTable,
                &[("id", "integer"), ("at", "date")],
            ),
            relation("events_p1", Table, &[("id", "integer"), ("at", "date")]),
            relation("cafÉ", Table, &[("id", "integer")]),
            relation("App", Table, &[("id", "integer")]),
            relation(
                "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghij123",
                Table,
                &[("secret", "text")],
            ),
            relation("v", View, &[("id", "integer"), ("ssn", "text")]),
            relation(
                "mv",
                MaterializedView,
                &[("id", "integer"), ("val", "text")],
            ),
            relation(
                "s",
                Sequence,
                &[
                    ("last_value", "bigint"),
                    ("log_cnt", "bigint"),
                    ("is_called", "boolean"),
                ],
            ),
        ],
        vec!["app".to_string()],
    )
}

fn statements(lines: &[&str]) -> Vec<interlock::governance::AccessStatement> {
    lines
        .iter()
        .map(|l| {
            l.parse()
                .unwrap_or_else(|e| panic!("bad fixture statement {l:?}: {e}"))
        })
        .collect()
}

/// policy.md §2–§4: role `analyst`, ssn denied by policy, email masked.
pub fn fixture_profile() -> AccessProfile {
    AccessProfile {
        roles: vec![SourceRole {
            name: "analyst".to_string(),
            statements: statements(&[
                "allow read app.t1",
                "allow read app.users",
                "allow read app.events",
                "allow read app.mv",
                "allow write app.t1",
                "allow write app.users",
            ]),
        }],
        policies: vec![Policy {
            name: "pii".to_string(),
            rules: vec![
                PolicyRule::Deny {
                    action: interlock::governance::Action::Read,
                    resource: "app.users.ssn".parse().unwrap_or_else(|e| panic!("{e}")),
                },
                PolicyRule::Deny {
                    action: interlock::governance::Action::Write,
                    resource: "app.users.ssn".parse().unwrap_or_else(|e| panic!("{e}")),
                },
            ]
            .into_iter()
            .map(Into::into)
            .collect(),
        }],
        redactions: vec![RedactionRule {
            schema: "app".to_string(),
            table: "users".to_string(),
            column: "email".to_string(),
            strategy: MaskStrategy::Redact,
            allow_filter: false,
        }],
    }
}
