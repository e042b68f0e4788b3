//! Behaviour of `decide` beyond the corpus: lineage, masking uses, writes,
//! EXPLAIN, parameters, policies. One table, one assertion helper.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod sqlfixture;

use interlock::governance::{
    decide, readable_columns, AccessProfile, Action, AllowedClass, Decision, MaskStrategy, Policy,
    PolicyRule, SqlLimits, Step,
};

fn outcome(decision: &Decision) -> String {
    match decision.allowed() {
        None => decision
            .refusal()
            .map_or(String::new(), |r| format!("refuse:{}", r.code)),
        Some(a) => {
            let class = match a.class {
                AllowedClass::Read => "read",
                AllowedClass::Write => "write",
            };
            let cols: Vec<String> = a
                .output_columns
                .iter()
                .map(|c| format!("{}{}", c.name, if c.mask.is_some() { "*" } else { "" }))
                .collect();
            format!("{class}[{}]", cols.join(","))
        }
    }
}

fn run(profile: &AccessProfile, cases: &[(&str, usize, &str)]) {
    let catalog = sqlfixture::fixture_catalog();
    let mut failures = Vec::new();
    for (sql, params, want) in cases {
        let got = outcome(&decide(
            sql,
            *params,
            &catalog,
            profile,
            &SqlLimits::default(),
        ));
        if got != *want {
            failures.push(format!("{sql}\n   want {want}\n   got  {got}"));
        }
    }
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}

#[test]
fn fixture_policy_behaviour() {
    run(
        &sqlfixture::fixture_profile(),
        &[
            ("SELECT id FROM app.t1 WHERE id = $1", 1, "read[id]"),
            ("SELECT id FROM app.t1 WHERE id = $2", 1, "refuse:sql_unbound_parameter"),
            ("SELECT 1 FROM app.users", 0, "read[?column?]"),
            ("SELECT count(*) FROM app.v", 0, "refuse:access_denied"),
            ("SELECT email FROM app.users ORDER BY 1", 0, "refuse:masked_column_misuse"),
            ("SELECT DISTINCT email FROM app.users", 0, "refuse:masked_column_misuse"),
            ("SELECT email FROM app.users UNION SELECT val FROM app.t1", 0, "refuse:masked_column_misuse"),
            ("SELECT email FROM app.users GROUP BY email", 0, "refuse:masked_column_misuse"),
            ("SELECT count(email) FROM app.users", 0, "refuse:masked_column_misuse"),
            ("SELECT email || '' FROM app.users", 0, "refuse:masked_column_misuse"),
            ("SELECT coalesce(email, 'x') FROM app.users", 0, "refuse:masked_column_misuse"),
            ("SELECT ARRAY(SELECT email FROM app.users)", 0, "refuse:masked_column_misuse"),
            ("SELECT (SELECT email FROM app.users LIMIT 1) AS e", 0, "read[e*]"),
            ("SELECT e FROM (SELECT email AS e FROM app.users) s WHERE s.e IS NOT NULL", 0, "refuse:masked_column_misuse"),
            ("SELECT id FROM (SELECT id, email FROM app.users) s", 0, "read[id]"),
            ("SELECT 1 FROM (SELECT ssn FROM app.users) s", 0, "refuse:policy_denied"),
            ("SELECT * FROM app.t1 JOIN app.mv USING (id)", 0, "read[id,val,val]"),
            ("SELECT t.id, x.v FROM app.t1 t, LATERAL (SELECT t.val AS v) x", 0, "read[id,v]"),
            ("SELECT t.id FROM app.t1 t, (SELECT t.val AS v) x", 0, "refuse:sql_unknown_column"),
            (
                "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT n FROM r",
                0,
                "read[n]",
            ),
            (
                "WITH RECURSIVE r(n) AS (SELECT id FROM app.t1 UNION ALL SELECT n FROM r JOIN app.users u ON u.id = r.n) SELECT n FROM r",
                0,
                "read[n]",
            ),
            ("SELECT g FROM generate_series(1, 3) g", 0, "read[g]"),
            ("SELECT generate_series(1, id) FROM app.t1", 0, "read[generate_series]"),
            ("SELECT t.id, g FROM app.t1 t, generate_series(1, t.id) g", 0, "read[id,g]"),
            ("SELECT g FROM generate_series(1, t.id) g, app.t1 t", 0, "refuse:sql_unknown_column"),
            ("SELECT u.x, u.ordinality FROM unnest(ARRAY['a', 'b']) WITH ORDINALITY AS u(x)", 0, "read[x,ordinality]"),
            ("SELECT e.key FROM app.t1 t, jsonb_each(jsonb_build_object('v', t.val)) e", 0, "read[key]"),
            ("SELECT e.value FROM app.users u, jsonb_each(jsonb_build_object('e', u.email)) e", 0, "refuse:masked_column_misuse"),
            ("SELECT x FROM app.users u, unnest(ARRAY[u.ssn]) x", 0, "refuse:policy_denied"),
            ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY id) FROM app.t1", 0, "read[percentile_cont]"),
            ("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ssn) FROM app.users", 0, "refuse:policy_denied"),
            ("SELECT percentile_cont(0.5) FROM app.t1", 0, "refuse:sql_function_not_allowed"),
            ("SELECT lower(val) WITHIN GROUP (ORDER BY id) FROM app.t1", 0, "refuse:sql_function_not_allowed"),
            ("SELECT rank(3) WITHIN GROUP (ORDER BY id), rank() OVER () FROM app.t1 GROUP BY id", 0, "read[rank,rank]"),
            ("SELECT md5(val) FROM app.t1", 0, "refuse:sql_function_not_allowed"),
            ("SELECT * FROM jsonb_to_recordset('[]') AS r(a int)", 0, "refuse:sql_unsupported_syntax"),
            ("SELECT * FROM lower('x')", 0, "refuse:sql_function_not_allowed"),
            ("SELECT numeric(id) FROM app.t1", 0, "refuse:sql_function_not_allowed"),
            ("SELECT \"numeric\"(id) FROM app.t1", 0, "refuse:sql_function_not_allowed"),
            ("SELECT \"date\"(at) FROM app.events", 0, "read[date]"),
            ("SELECT make_interval(days => id) FROM app.t1", 0, "read[make_interval]"),
            ("SELECT make_interval(days => ssn::int) FROM app.users", 0, "refuse:policy_denied"),
            ("SELECT row_to_json(t) FROM app.t1 t", 0, "read[row_to_json]"),
            ("SELECT json_agg(t ORDER BY t.id) FROM app.t1 t", 0, "read[json_agg]"),
            ("SELECT row_to_json(u) FROM app.users u", 0, "refuse:policy_denied"),
            ("SELECT json_agg(s) FROM (SELECT id, email FROM app.users) s", 0, "refuse:masked_column_misuse"),
            ("SELECT row_to_json(t)::text || 'x' FROM app.t1 t", 0, "read[?column?]"),
            ("SELECT row_number() FROM app.t1", 0, "refuse:sql_function_not_allowed"),
            ("SELECT lower(val) OVER () FROM app.t1", 0, "refuse:sql_function_not_allowed"),
            ("SELECT \"LOWER\"(val) FROM app.t1", 0, "refuse:sql_function_not_allowed"),
            ("SELECT string_agg(val, ',' ORDER BY id) FROM app.t1", 0, "read[string_agg]"),
            ("SELECT count(*) FILTER (WHERE email IS NULL) FROM app.users", 0, "refuse:masked_column_misuse"),
            ("SELECT id::app.users FROM app.t1", 0, "refuse:sql_cast_not_allowed"),
            ("SELECT t FROM app.t1 t ORDER BY t", 0, "refuse:sql_whole_row_misuse"),
            ("SELECT (t).val FROM app.t1 t", 0, "read[val]"),
            ("SELECT id FROM app.t1 WHERE id IN (SELECT id FROM app.users WHERE email = 'a')", 0, "refuse:masked_column_misuse"),
            ("SELECT id FROM app.t1 FOR SHARE", 0, "refuse:sql_forbidden_statement"),
            ("SELECT * FROM (SELECT id FROM app.t1 FOR UPDATE) s", 0, "refuse:sql_forbidden_statement"),
            ("SELECT 1 WHERE EXISTS (SELECT 1 FROM app.t1 WHERE id = 1 FOR UPDATE)", 0, "refuse:sql_forbidden_statement"),
            ("SELECT id FROM app.t1 ORDER BY val", 0, "read[id]"),
            ("SELECT val AS v FROM app.t1 ORDER BY v", 0, "read[v]"),
            ("SELECT id FROM app.t1 WHERE id = ANY(ARRAY[1, 2])", 0, "read[id]"),
            ("SELECT id FROM t1 JOIN users USING (id)", 0, "read[id]"),
            ("SELECT id FROM app.t1, app.users", 0, "refuse:sql_ambiguous_column"),
            ("SELECT app.t1.id FROM app.t1", 0, "read[id]"),
            ("SELECT now() - INTERVAL '1 day'", 0, "read[?column?]"),
            ("SELECT EXTRACT(YEAR FROM at) FROM app.events", 0, "read[extract]"),
            ("SELECT position('a' IN val) FROM app.t1", 0, "read[position]"),
            ("SELECT position('1' IN ssn) FROM app.users", 0, "refuse:policy_denied"),
            ("SELECT overlay(val PLACING ssn FROM 1) FROM app.t1, app.users", 0, "refuse:policy_denied"),
            // writes
            ("INSERT INTO app.users (id, email) VALUES (1, 'x') RETURNING email", 0, "write[email*]"),
            ("INSERT INTO app.users (id, email) VALUES (1, 'x') RETURNING *", 0, "refuse:policy_denied"),
            ("UPDATE app.users SET email = lower(email)", 0, "refuse:masked_column_misuse"),
            ("UPDATE app.t1 SET val = u.email FROM app.users u WHERE u.id = app.t1.id", 0, "refuse:masked_column_misuse"),
            ("UPDATE app.t1 SET val = val || 'x' WHERE id = 1", 0, "write[]"),
            ("DELETE FROM app.t1 USING app.users u WHERE u.id = app.t1.id", 0, "write[]"),
            ("DELETE FROM app.users WHERE email = 'a'", 0, "refuse:masked_column_misuse"),
            ("DELETE FROM app.events", 0, "refuse:access_denied"),
            ("INSERT INTO app.t1 VALUES (1, 'a') ON CONFLICT (id) DO UPDATE SET val = EXCLUDED.val WHERE app.t1.val IS NULL", 0, "write[]"),
            ("INSERT INTO app.t1 SELECT id, email FROM app.users", 0, "refuse:masked_column_misuse"),
            ("INSERT INTO app.t1 (id, val) SELECT 1", 0, "refuse:sql_column_count_mismatch"),
            ("EXPLAIN ANALYZE INSERT INTO app.t1 VALUES (1, 'x')", 0, "write[QUERY PLAN]"),
            ("EXPLAIN (ANALYZE off) DELETE FROM app.t1", 0, "read[QUERY PLAN]"),
            ("EXPLAIN (ANALYZE maybe) DELETE FROM app.t1", 0, "refuse:sql_forbidden_statement"),
            ("EXPLAIN DELETE FROM app.events", 0, "refuse:access_denied"),
            ("WITH d AS (DELETE FROM app.t1 RETURNING id) SELECT id FROM d", 0, "write[id]"),
            ("SELECT 1 FROM app.t1 WHERE id IN (WITH d AS (DELETE FROM app.t1 RETURNING id) SELECT id FROM d)", 0, "refuse:sql_forbidden_statement"),
            ("CREATE TEMP TABLE x (id int)", 0, "refuse:sql_forbidden_statement"),
        ],
    );
}

#[test]
fn allow_filter_tolerates_filters_but_not_expressions() {
    let mut profile = sqlfixture::fixture_profile();
    profile.redactions[0].allow_filter = true;
    profile.redactions[0].strategy = MaskStrategy::Hash;
    run(
        &profile,
        &[
            (
                "SELECT id FROM app.users WHERE email = 'a@x.example'",
                0,
                "read[id]",
            ),
            (
                "SELECT a.id FROM app.users a JOIN app.users b ON a.email = b.email",
                0,
                "read[id]",
            ),
            (
                "SELECT id FROM app.users WHERE upper(email) = 'A'",
                0,
                "refuse:masked_column_misuse",
            ),
            (
                "SELECT id FROM app.users ORDER BY email",
                0,
                "refuse:masked_column_misuse",
            ),
            (
                "SELECT email FROM app.users WHERE email LIKE 'a%'",
                0,
                "read[email*]",
            ),
        ],
    );
}

#[test]
fn refusals_name_the_step_rule_and_object() {
    let catalog = sqlfixture::fixture_catalog();
    let profile = sqlfixture::fixture_profile();
    let cases = [
        (
            "SELECT ssn FROM app.users",
            Step::Policy,
            "policy pii: deny read app.users.ssn",
            "app.users.ssn",
        ),
        (
            "SELECT * FROM app.v",
            Step::Authorize,
            "role analyst: no allow for read app.v",
            "app.v",
        ),
        (
            "SELECT md5(val) FROM app.t1",
            Step::Resolve,
            "function allowlist",
            "md5",
        ),
        (
            "SELECT upper(email) FROM app.users",
            Step::Redaction,
            "redaction app.users.email",
            "app.users.email",
        ),
        (
            "LISTEN ch",
            Step::Classify,
            "statement classifier",
            "LISTEN",
        ),
        (
            "SELECT 1\u{200B}",
            Step::Input,
            "input hygiene",
            "zero-width",
        ),
    ];
    for (sql, step, rule, mentions) in cases {
        let decision = decide(sql, 0, &catalog, &profile, &SqlLimits::default());
        let refusal = decision
            .refusal()
            .unwrap_or_else(|| panic!("{sql} was allowed"));
        assert_eq!(refusal.step, step, "{sql}");
        assert_eq!(refusal.rule, rule, "{sql}");
        assert!(
            refusal.reason.contains(mentions),
            "{sql}: {}",
            refusal.reason
        );
        assert_eq!(
            refusal.reason.matches(". ").count(),
            0,
            "one sentence: {}",
            refusal.reason
        );
        assert!(refusal.reason.len() < 240, "short: {}", refusal.reason);
    }
}

#[test]
fn too_long_sql_is_refused_before_parsing() {
    let catalog = sqlfixture::fixture_catalog();
    let profile = sqlfixture::fixture_profile();
    let limits = SqlLimits {
        max_sql_bytes: 16,
        ..SqlLimits::default()
    };
    let decision = decide("SELECT id FROM app.t1", 0, &catalog, &profile, &limits);
    assert_eq!(decision.refusal().map(|r| r.code), Some("sql_too_long"));
}

#[test]
fn allowed_decisions_carry_what_the_executor_needs() {
    let catalog = sqlfixture::fixture_catalog();
    let mut profile = sqlfixture::fixture_profile();
    profile.policies.push(Policy {
        name: "limits".into(),
        rules: vec![
            PolicyRule::MaxRows(500),
            PolicyRule::MaxRows(100),
            PolicyRule::ApprovalsRequired {
                resource: "app.users".parse().unwrap_or_else(|e| panic!("{e}")),
                approvals: 2,
            },
        ]
        .into_iter()
        .map(Into::into)
        .collect(),
    });
    let read = decide(
        "select id, email, now() from APP.USERS where id > 1",
        0,
        &catalog,
        &profile,
        &SqlLimits::default(),
    );
    let read = read
        .allowed()
        .unwrap_or_else(|| panic!("refused: {:?}", read.refusal()));
    assert_eq!(
        read.statement,
        "SELECT id, email, now() FROM APP.USERS WHERE id > 1"
    );
    assert_eq!(read.row_cap, Some(100));
    assert_eq!(read.approvals_required, 0);
    assert!(read.non_deterministic);
    assert_eq!(read.output_columns.len(), 3);
    assert_eq!(
        read.output_columns[1].sources[0].to_string(),
        "app.users.email"
    );
    assert!(read.output_columns[1].mask.is_some());
    assert!(read.output_columns[2].sources.is_empty());

    let write = decide(
        "UPDATE app.users SET email = 'x' WHERE id = 1",
        0,
        &catalog,
        &profile,
        &SqlLimits::default(),
    );
    let write = write
        .allowed()
        .unwrap_or_else(|| panic!("refused: {:?}", write.refusal()));
    assert_eq!(write.class, AllowedClass::Write);
    assert_eq!(write.approvals_required, 2);
    assert_eq!(write.columns_written.len(), 1);
    assert_eq!(write.columns_written[0].to_string(), "app.users.email");
    assert_eq!(write.tables_read[0].to_string(), "app.users");
    assert!(!write.deciding_rules.is_empty());
    let t1 = decide(
        "DELETE FROM app.t1",
        0,
        &catalog,
        &profile,
        &SqlLimits::default(),
    );
    assert_eq!(t1.allowed().map(|a| a.approvals_required), Some(1));
}

#[test]
fn describe_access_lists_what_reads_allow() {
    let catalog = sqlfixture::fixture_catalog();
    let profile = sqlfixture::fixture_profile();
    let listed: Vec<(String, Vec<String>, bool)> = readable_columns(&profile, &catalog)
        .into_iter()
        .map(|r| {
            let cols = r
                .columns
                .iter()
                .map(|c| format!("{}{}", c.name, if c.mask.is_some() { "*" } else { "" }))
                .collect();
            (r.relation.to_string(), cols, r.all_columns)
        })
        .collect();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        listed,
        vec![
            ("app.users".to_string(), s(&["id", "email*"]), false),
            ("app.t1".to_string(), s(&["id", "val"]), true),
            ("app.events".to_string(), s(&["id", "at"]), true),
            ("app.mv".to_string(), s(&["id", "val"]), true),
        ]
    );
    let _ = Action::Describe;
}
