use chrono::TimeZone;

use super::*;

fn call() -> CallFacts {
    let mut claims = serde_json::Map::new();
    claims.insert("dept".into(), "finance".into());
    claims.insert("level".into(), 3.into());
    claims.insert("teams".into(), serde_json::json!(["red", "blue"]));
    CallFacts {
        identity: "ci-bot".into(),
        kind: "agent".into(),
        credential: "oauth".into(),
        groups: vec!["oncall".into(), "analysts".into()],
        claims,
        tool: "interlock_query".into(),
        source: "shop".into(),
        adapter: "mcp".into(),
        dialect: "2025-06-18".into(),
        // A Saturday, 22:30 in Berlin (20:30 UTC).
        time: chrono::Utc
            .with_ymd_and_hms(2026, 12, 5, 21, 30, 0)
            .unwrap(),
        zone: "Europe/Berlin".into(),
        max_rows: Some(50),
        source_max_rows: 1000,
    }
}

fn statement() -> StatementFacts {
    StatementFacts {
        class: "write",
        tables_read: vec!["public.customers".into()],
        columns_read: vec![
            "public.customers.email".into(),
            "public.customers.id".into(),
        ],
        columns_returned: vec!["public.customers.email".into()],
        tables_written: vec!["public.orders".into()],
        columns_written: vec!["public.orders.status".into()],
        functions: vec!["lower".into()],
        row_cap: 50,
        ..Default::default()
    }
}

fn facts() -> FactValues {
    let plan = PlanFacts {
        cost: 18_441,
        rows: 1_000_000,
        bytes: 40_000_000,
        result_rows: 1_001,
        seq_scans: vec!["public.events".into()],
    };
    FactValues::planned(&call(), &["analyst".to_string()], &statement(), &plan)
}

#[test]
fn conditions_over_every_fact_evaluate_as_written() {
    let cases: &[(&str, bool)] = &[
        ("caller.identity == 'ci-bot'", true),
        ("caller.identity.startsWith('ci-')", true),
        (
            "caller.kind == 'agent' && caller.credential == 'oauth'",
            true,
        ),
        ("'oncall' in caller.groups", true),
        ("caller.groups.exists(g, g.endsWith('ysts'))", true),
        ("caller.claims.dept == 'finance'", true),
        (
            "has(caller.claims.dept) && !has(caller.claims.region)",
            true,
        ),
        ("caller.claims.level >= 3", true),
        ("'red' in caller.claims.teams", true),
        ("'analyst' in caller.roles", true),
        (
            "request.tool == 'interlock_query' && request.source == 'shop'",
            true,
        ),
        (
            "request.adapter == 'mcp' && request.dialect.startsWith('2025')",
            true,
        ),
        ("request.hour == 22 && request.minute == 30", true),
        ("request.weekday == 6 && request.date == '2026-12-05'", true),
        ("request.zone == 'Europe/Berlin'", true),
        ("request.hour < 9 || request.hour >= 18", true),
        ("request.time > timestamp('2026-01-01T00:00:00Z')", true),
        (
            "request.time.getHours('Europe/Berlin') == request.hour",
            true,
        ),
        (
            "request.time - timestamp('2026-12-05T20:00:00Z') < duration('2h')",
            true,
        ),
        ("request.max_rows == 50", true),
        ("statement.class == 'write'", true),
        ("'public.orders' in statement.tables_written", true),
        (
            "statement.columns_written.all(c, c.startsWith('public.orders.'))",
            true,
        ),
        (
            "statement.columns_read.exists(c, c.matches('\\\\.email$'))",
            true,
        ),
        ("statement.columns_returned.size() == 1", true),
        ("size(statement.tables_read) == 1", true),
        (
            "statement.tables_read.filter(t, t.startsWith('hr.')).size() == 0",
            true,
        ),
        (
            "statement.functions.map(f, f + '()').exists(f, f == 'lower()')",
            true,
        ),
        // Both spellings of a function's name (docs/policy-conditions.md).
        ("'pg_catalog.lower' in statement.functions", true),
        ("'lower' in statement.functions", true),
        ("'string' in statement.function_families", true),
        ("'json' in statement.function_families", false),
        ("'pg_catalog.upper' in statement.functions", false),
        (
            "!statement.explain && !statement.analyze && !statement.deletes_rows",
            true,
        ),
        ("!statement.reads_clock", true),
        ("statement.row_cap == 50", true),
        ("statement.class == 'read'", false),
        ("['a', 'b'].exists_one(x, x == 'a')", true),
        ("request.hour in [20, 21, 22]", true),
        ("{'a': 1}['a'] == 1", true),
        (
            "statement.row_cap > 10 ? caller.kind == 'agent' : false",
            true,
        ),
    ];
    let facts = facts();
    for (text, want) in cases {
        let c = Condition::compile(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(c.cost() <= check::MAX_COST);
        assert_eq!(c.evaluate(&facts), Ok(*want), "{text}");
    }
}

#[test]
fn wrong_conditions_are_refused_with_their_position() {
    let cases: &[(&str, (usize, usize), &str)] = &[
        (
            "caller.grups == []",
            (1, 7),
            "unknown fact caller.grups; caller has identity, kind",
        ),
        ("user.name == 'x'", (1, 1), "unknown fact \"user\""),
        // A literal the fact never holds: the rule would never (or always) apply.
        (
            "statement.class == 'writes'",
            (1, 17),
            "statement.class is never \"writes\": it is one of read, write",
        ),
        (
            "'robot' != caller.kind",
            (1, 9),
            "caller.kind is never \"robot\"",
        ),
        (
            "'pg_sleep' in statement.functions",
            (1, 12),
            "statement.functions never holds \"pg_sleep\"",
        ),
        (
            "statement.class == 1",
            (1, 17),
            "string and int cannot be equal",
        ),
        (
            "request.hour == '9'",
            (1, 14),
            "int and string cannot be equal",
        ),
        (
            "request.hour",
            (1, 8),
            "a condition must be a bool, not int",
        ),
        ("caller.claims.admin", (1, 14), "only known at evaluation"),
        ("caller.identity.size", (1, 16), "string has no field"),
        (
            "'x' in caller.identity",
            (1, 5),
            "`in` looks for a string in a list",
        ),
        ("caller.identity +", (1, 18), "does not parse"),
        (
            "caller.identity.lowerAscii() == 'x'",
            (1, 27),
            "unknown method lowerAscii()",
        ),
        ("now() > 1", (1, 4), "unknown function now()"),
        (
            "caller.identity.matches(caller.kind)",
            (1, 24),
            "string literal pattern",
        ),
        (
            "caller.identity.matches('(')",
            (1, 24),
            "not a valid pattern",
        ),
        (
            "request.time > timestamp('yesterday')",
            (1, 25),
            "not an RFC 3339 time",
        ),
        (
            "request.time.getHours('Mars/Base') == 1",
            (1, 22),
            "not a time zone",
        ),
        (
            "duration('ten minutes') > duration('1m')",
            (1, 9),
            "not a duration",
        ),
        (
            "statement.columns_read.exists(a, statement.columns_read.exists(b, a == b))",
            (1, 30),
            "more than the 20000 allowed",
        ),
        ("", (1, 1), "empty"),
        ("caller.kind == == 'x'", (1, 16), "does not parse"),
    ];
    for (text, (line, column), fragment) in cases {
        let e = Condition::compile(text).expect_err(text);
        assert!(e.message.contains(fragment), "{text}: {e}");
        assert_eq!((e.line, e.column), (*line, *column), "{text}: {e}");
    }
    let long = format!("{} == 'x'", "caller.identity + ".repeat(300));
    assert!(Condition::compile(&long)
        .unwrap_err()
        .message
        .contains("bytes"));
    let deep = format!("{}true{}", "!(".repeat(100), ")".repeat(100));
    assert!(Condition::compile(&deep).is_err());
}

#[test]
fn missing_claims_and_oversized_facts_fail_to_evaluate() {
    let c = Condition::compile("caller.claims.region == 'eu'").unwrap();
    assert!(
        c.evaluate(&facts()).is_err(),
        "a missing claim is an error, not false"
    );
    let mut s = statement();
    s.tables_read = (0..=schema::MAX_TABLES)
        .map(|i| format!("s.t{i}"))
        .collect();
    let oversized = FactValues::new(&call(), &[], &s);
    let always = Condition::compile("true").unwrap();
    assert!(always
        .evaluate(&oversized)
        .unwrap_err()
        .contains("statement.tables_read"));
}

#[test]
fn the_values_carry_exactly_the_schema_fields() {
    let values = facts();
    let roots = values.roots.as_ref().unwrap();
    assert_eq!(roots.len(), schema::ROOTS.len());
    for (object, value) in schema::ROOTS.iter().zip(roots) {
        let Value::Map(map) = value else {
            panic!("{} is not a map", object.name)
        };
        let mut have: Vec<String> = map
            .map
            .keys()
            .map(|k| match k {
                cel::objects::Key::String(s) => s.to_string(),
                other => panic!("{other:?}"),
            })
            .collect();
        have.sort();
        let mut want: Vec<String> = object.field_names().iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(have, want, "{}", object.name);
    }
}

#[test]
fn every_fact_type_checks_as_the_value_it_is_filled_with() {
    // Differential: the checker's type of each fact against the runtime's value.
    let values = facts();
    for object in schema::ROOTS {
        for f in object.fields {
            let probe = match f.ty {
                schema::FactType::Bool => {
                    format!("{}.{} == true || {0}.{1} == false", object.name, f.name)
                }
                schema::FactType::Int => format!("{}.{} >= -1", object.name, f.name),
                schema::FactType::String => format!("{}.{}.size() >= 0", object.name, f.name),
                schema::FactType::Timestamp => {
                    format!("{}.{}.getFullYear() > 2000", object.name, f.name)
                }
                schema::FactType::Strings(_) => {
                    format!("{}.{}.all(x, x.size() >= 0)", object.name, f.name)
                }
                schema::FactType::Claims => format!("size({}.{}) >= 0", object.name, f.name),
                schema::FactType::Object(_) => continue,
            };
            let c = Condition::compile(&probe).unwrap_or_else(|e| panic!("{probe}: {e}"));
            assert_eq!(c.evaluate(&values), Ok(true), "{probe}");
        }
    }
}

#[test]
fn the_documented_fact_table_is_the_schema() {
    let doc = include_str!("../../../docs/policy-conditions.md");
    let begin = doc.find("<!-- facts:begin").unwrap();
    let body = &doc
        [doc[begin..].find("-->").unwrap() + begin + 3..doc.find("<!-- facts:end -->").unwrap()];
    assert_eq!(
        body.trim(),
        schema::markdown().trim(),
        "regenerate the table from schema::markdown()"
    );
}

#[test]
fn call_facts_survive_their_json_form() {
    let c = call();
    let back: CallFacts = serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
    assert_eq!(back, c);
}
