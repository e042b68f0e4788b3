//! Evaluator precedence: deny beats allow, policies never grant, patterns at
//! every level, no matching statement means deny.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use interlock::governance::{
    evaluate, AccessProfile, AccessRequest, AccessStatement, Action, Effect, Policy, PolicyRule,
    SourceRole,
};

fn role(name: &str, lines: &[&str]) -> SourceRole {
    SourceRole {
        name: name.to_string(),
        statements: lines
            .iter()
            .map(|l| {
                l.parse::<AccessStatement>()
                    .unwrap_or_else(|e| panic!("{l}: {e}"))
            })
            .collect(),
    }
}

fn deny_policy(name: &str, action: Action, resource: &str) -> Policy {
    Policy {
        name: name.to_string(),
        rules: vec![PolicyRule::Deny {
            action,
            resource: resource.parse().unwrap_or_else(|e| panic!("{e}")),
        }]
        .into_iter()
        .map(Into::into)
        .collect(),
    }
}

/// (roles, policies, action, "schema.table[.column]", expected effect, expected rule text)
type Case = (
    Vec<SourceRole>,
    Vec<Policy>,
    Action,
    &'static str,
    Effect,
    &'static str,
);

#[test]
fn evaluator_precedence_table() {
    use Action::{Read, Write};
    use Effect::{Allow, Deny};
    let cases: Vec<Case> = vec![
        // no statement at all: deny
        (
            vec![],
            vec![],
            Read,
            "app.t1",
            Deny,
            "no roles: no allow for read app.t1",
        ),
        (
            vec![role("a", &[])],
            vec![],
            Read,
            "app.t1.id",
            Deny,
            "role a: no allow for read app.t1.id",
        ),
        // patterns at every level
        (
            vec![role("a", &["allow read *"])],
            vec![],
            Read,
            "app.t1.id",
            Allow,
            "role a: allow read *",
        ),
        (
            vec![role("a", &["allow read app.*"])],
            vec![],
            Read,
            "app.t1",
            Allow,
            "role a: allow read app.*",
        ),
        (
            vec![role("a", &["allow read app.*"])],
            vec![],
            Read,
            "other.t1",
            Deny,
            "role a: no allow for read other.t1",
        ),
        (
            vec![role("a", &["allow read app.t1"])],
            vec![],
            Read,
            "app.t1.val",
            Allow,
            "role a: allow read app.t1",
        ),
        (
            vec![role("a", &["allow read app.t1.id"])],
            vec![],
            Read,
            "app.t1.val",
            Deny,
            "role a: no allow for read app.t1.val",
        ),
        // a column allow makes the table readable (for reads), not writable
        (
            vec![role("a", &["allow read app.t1.id"])],
            vec![],
            Read,
            "app.t1",
            Allow,
            "role a: allow read app.t1.id",
        ),
        (
            vec![role("a", &["allow write app.t1.id"])],
            vec![],
            Write,
            "app.t1",
            Deny,
            "role a: no allow for write app.t1",
        ),
        (
            vec![role("a", &["allow write app.t1.id"])],
            vec![],
            Write,
            "app.t1.id",
            Allow,
            "role a: allow write app.t1.id",
        ),
        // the action must match
        (
            vec![role("a", &["allow read app.t1"])],
            vec![],
            Write,
            "app.t1",
            Deny,
            "role a: no allow for write app.t1",
        ),
        // deny beats allow, in the same role or another one
        (
            vec![role("a", &["allow read app.*", "deny read app.users"])],
            vec![],
            Read,
            "app.users.id",
            Deny,
            "role a: deny read app.users",
        ),
        (
            vec![
                role("a", &["allow read *"]),
                role("b", &["deny read app.users.ssn"]),
            ],
            vec![],
            Read,
            "app.users.ssn",
            Deny,
            "role b: deny read app.users.ssn",
        ),
        // a column deny leaves the table and other columns usable
        (
            vec![role(
                "a",
                &["allow read app.users", "deny read app.users.ssn"],
            )],
            vec![],
            Read,
            "app.users",
            Allow,
            "role a: allow read app.users",
        ),
        (
            vec![role(
                "a",
                &["allow read app.users", "deny read app.users.ssn"],
            )],
            vec![],
            Read,
            "app.users.id",
            Allow,
            "role a: allow read app.users",
        ),
        // a table deny refuses the table-level check
        (
            vec![role("a", &["allow write app.*", "deny write app.users"])],
            vec![],
            Write,
            "app.users",
            Deny,
            "role a: deny write app.users",
        ),
        // policies deny, and win over role allows
        (
            vec![role("a", &["allow read *"])],
            vec![deny_policy("pii", Read, "app.users.ssn")],
            Read,
            "app.users.ssn",
            Deny,
            "policy pii: deny read app.users.ssn",
        ),
        (
            vec![role("a", &["allow read *"])],
            vec![deny_policy("pii", Read, "app.users.ssn")],
            Read,
            "app.users.email",
            Allow,
            "role a: allow read *",
        ),
        // a policy can never grant
        (
            vec![],
            vec![deny_policy("p", Read, "app.other")],
            Read,
            "app.t1",
            Deny,
            "no roles: no allow for read app.t1",
        ),
        (
            vec![role("a", &[])],
            vec![Policy {
                name: "caps".into(),
                rules: vec![
                    PolicyRule::MaxRows(10),
                    PolicyRule::ApprovalsRequired {
                        resource: "*".parse().unwrap_or_else(|e| panic!("{e}")),
                        approvals: 3,
                    },
                ]
                .into_iter()
                .map(Into::into)
                .collect(),
            }],
            Read,
            "app.t1",
            Deny,
            "role a: no allow for read app.t1",
        ),
        // quoted names are exact
        (
            vec![role("a", &["allow read app.\"cafÉ\""])],
            vec![],
            Read,
            "app.cafÉ",
            Allow,
            "role a: allow read app.\"cafÉ\"",
        ),
        (
            vec![role("a", &["allow read app.\"cafÉ\""])],
            vec![],
            Read,
            "app.café",
            Deny,
            "role a: no allow for read app.\"café\"",
        ),
    ];
    let mut failures = Vec::new();
    for (i, (roles, policies, action, resource, effect, rule)) in cases.into_iter().enumerate() {
        let profile = AccessProfile {
            roles,
            policies,
            redactions: vec![],
        };
        let parts: Vec<&str> = resource.split('.').collect();
        let request = AccessRequest {
            action,
            schema: parts[0],
            table: parts[1],
            column: parts.get(2).copied(),
        };
        let decision = evaluate(&profile, &request);
        if decision.effect != effect || decision.to_string() != rule {
            failures.push(format!(
                "#{i} {action} {resource}: want {effect} '{rule}', got {} '{decision}'",
                decision.effect
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn statements_parse_and_display() {
    let cases = [
        ("allow read app.users", "allow read app.users"),
        ("DENY Write APP.Users.SSN", "deny write app.users.ssn"),
        ("allow describe *", "allow describe *"),
        ("allow discover app.*", "allow discover app.*"),
        ("allow read app.\"App\"", "allow read app.\"App\""),
    ];
    for (text, display) in cases {
        let parsed: AccessStatement = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(parsed.to_string(), display);
    }
    for bad in [
        "allow read",
        "permit read app.t1",
        "allow drop app.t1",
        "allow read app",
    ] {
        assert!(bad.parse::<AccessStatement>().is_err(), "{bad}");
    }
}

#[test]
fn profile_round_trips_through_json() {
    let profile = AccessProfile {
        roles: vec![role(
            "a",
            &["allow read app.users", "deny read app.users.ssn"],
        )],
        policies: vec![Policy {
            name: "p".into(),
            rules: vec![PolicyRule::MaxRows(5)]
                .into_iter()
                .map(Into::into)
                .collect(),
        }],
        redactions: vec![],
    };
    let json = serde_json::to_string(&profile).unwrap_or_default();
    assert!(json.contains("\"app.users.ssn\""), "{json}");
    let back: AccessProfile = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(back, profile);
}
