//! The SQL-safety case corpus, run through the product on real PostgreSQL.
//!
//! The fixture schema is loaded into a real database; the fixture policy is applied as an
//! access file (tests/fixtures/sql-safety/access.toml) through the operator code path; the
//! catalog is read by the product's catalog scanner and stored in the control database; every
//! case goes through the real decision code with the profile loaded from the control
//! database. Allowed reads are then executed through the product's executor (read-only
//! session) and their masked columns checked. Set `INTERLOCK_SQL_CASES` to run another
//! corpus of the same format.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod sqlfixture;

use std::path::PathBuf;

use interlock::call::mask;
use interlock::control::{policy_file, profiles, sources};
use interlock::governance::{decide, decide_remembering, AllowedClass, SqlLimits};
use interlock::sources::catalog;
use interlock::sources::postgres::execute::{self, CapForm, Limits, Mode, Rows, TextParam};
use interlock::sources::postgres::pool;
use interlock::sql::memo::{ShapeMemo, DEFAULT_MEMO_BYTES};
use serde_json::Value;

use sqlfixture::corpus::FIXTURE_DIR;
const RAW_EMAILS: [&str; 3] = ["a@x.example", "b@x.example", "c@x.example"];

/// The fixture's psql script without its meta-commands.
fn fixture_sql() -> String {
    std::fs::read_to_string(PathBuf::from(FIXTURE_DIR).join("schema.sql"))
        .expect("schema.sql")
        .lines()
        .filter(|l| !l.trim_start().starts_with('\\'))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn every_case_of_the_corpus_gets_its_verdict() {
    let control_db = common::fresh_control_db().await;
    let corpus_db = common::fresh_database("corpus").await;
    common::admin(&corpus_db)
        .await
        .batch_execute(&fixture_sql())
        .await
        .expect("load fixture schema");

    let settings = common::settings_for(&control_db);
    let control = interlock::control::connect_pool(&settings.control).expect("pool");
    let info = common::cluster();
    let source = sources::add_source(
        &control,
        &sources::NewSource {
            id: "corpus".into(),
            host: Some("127.0.0.1".into()),
            port: Some(info.port),
            dbname: Some(corpus_db.clone()),
            user: Some(interlock::pgcluster::SUPERUSER.into()),
            password_file: Some(info.password_file.to_string_lossy().into_owned()),
            search_path: Some(vec!["app".into()]),
            statement_timeout_ms: Some(5_000),
            ..Default::default()
        },
    )
    .await
    .expect("register source");
    let access = std::fs::read_to_string(PathBuf::from(FIXTURE_DIR).join("access.toml"))
        .expect("access.toml");
    policy_file::apply(
        &control,
        &policy_file::AccessFile::parse(&access).expect("parse"),
    )
    .await
    .expect("apply fixture policy");
    let stored = catalog::refresh(&control, &source, 10_000)
        .await
        .expect("catalog scan");
    let catalog = catalog::to_catalog(&stored, &source.search_path);
    let identity = interlock::control::identities::list_identities(&control)
        .await
        .expect("identities")
        .into_iter()
        .find(|i| i.name == "fixture-analyst")
        .expect("identity");
    let profile = profiles::load_profile(&control, identity.id, "corpus")
        .await
        .expect("profile")
        .expect("granted");
    let pools = pool::build(&source, 1).expect("pools");
    let limits = SqlLimits::default();

    let cases = sqlfixture::corpus::load_cases();
    assert!(!cases.is_empty());
    let mut failures = Vec::new();
    let mut executed = 0;
    let mut appended = 0;
    // Decided through one memo for the whole corpus, as the gateway does, and
    // twice (understood, then recalled): both must be the decision without it.
    let memo = ShapeMemo::new(DEFAULT_MEMO_BYTES);
    for case in &cases {
        let decision = decide(&case.sql, 0, &catalog, &profile, &limits);
        for round in ["first", "second"] {
            let remembered =
                decide_remembering(&case.sql, 0, &catalog, Some(&memo), &profile, &limits);
            if remembered != decision {
                failures.push(format!(
                    "{}: the {round} decision through the memo differs:\n  {remembered:?}\n  {decision:?}",
                    case.id
                ));
            }
        }
        let got = match (decision.allowed(), decision.refusal()) {
            (Some(a), _) if a.class == AllowedClass::Write => "write",
            (Some(a), _) if a.output_columns.iter().any(|c| c.mask.is_some()) => "read-masked",
            (Some(_), _) => "read",
            (None, _) => "refuse",
        };
        if got != case.verdict {
            let why = decision
                .refusal()
                .map(|r| format!("{:?} {}: {} ({})", r.step, r.code, r.reason, r.rule))
                .unwrap_or_default();
            failures.push(format!(
                "{}: expected {}, got {got} {why}",
                case.id, case.verdict
            ));
            continue;
        }
        if let Some(refusal) = decision.refusal() {
            // Refusals name what refused and never echo values from the fixture data.
            assert!(
                !refusal.reason.is_empty() && !refusal.rule.is_empty(),
                "{}",
                case.id
            );
            for raw in RAW_EMAILS.iter().chain(["123-45-6789"].iter()) {
                assert!(
                    !refusal.reason.contains(raw),
                    "{}: reason leaks a value",
                    case.id
                );
            }
        }
        let Some(allowed) = decision.allowed() else {
            continue;
        };
        if allowed.class != AllowedClass::Read {
            continue;
        }
        // Execute what the product would execute, read-only, and check the masks.
        let run = run_read(&pools, allowed, allowed.cap_form, 1000).await;
        // A cap appended to the statement is the same query as the statement capped as a
        // derived table: the same columns, the same rows, the same truncation.
        if allowed.explain.is_none() && allowed.cap_form == CapForm::Appended {
            appended += 1;
            for cap in [1000, 1] {
                let appended = run_read(&pools, allowed, CapForm::Appended, cap).await;
                let wrapped = run_read(&pools, allowed, CapForm::Wrapped, cap).await;
                if let Err(why) = same_result(appended, wrapped, cap, allowed.non_deterministic) {
                    failures.push(format!("{}: appended cap of {cap} differs: {why}", case.id));
                }
            }
        }
        let mut rows = match run {
            Ok(rows) => rows,
            Err(e) => {
                failures.push(format!("{}: allowed read failed to execute: {e}", case.id));
                continue;
            }
        };
        executed += 1;
        if let Err(e) = mask::apply_masks(&mut rows, &allowed.output_columns, &source.mask_key) {
            failures.push(format!("{}: {e}", case.id));
            continue;
        }
        for (i, col) in allowed.output_columns.iter().enumerate() {
            for row in &rows.rows {
                let v = &row[i];
                if col.mask.is_some() {
                    if !(v.is_null() || v == &Value::String("[REDACTED]".into())) {
                        failures.push(format!("{}: column {} not masked: {v}", case.id, col.name));
                    }
                } else if let Some(s) = v.as_str() {
                    if RAW_EMAILS.iter().any(|e| s.contains(e)) {
                        failures.push(format!(
                            "{}: unmasked column {} leaks an email",
                            case.id, col.name
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(executed > 30, "allowed reads were executed ({executed})");
    assert!(
        appended > 20,
        "reads run with an appended cap and compared ({appended})"
    );
    // The cap is put on the statement the server runs, in either form: a row bomb of two
    // billion rows is answered with its first rows, well inside the source's 5 s statement
    // timeout, instead of being produced and thrown away by the gateway.
    for (sql, form) in [
        (
            "SELECT generate_series(1, 2000000000) AS g",
            CapForm::Appended,
        ),
        (
            "SELECT generate_series(1, 2000000000) AS g LIMIT 1900000000",
            CapForm::Wrapped,
        ),
    ] {
        let decision = decide(sql, 0, &catalog, &profile, &limits);
        let allowed = decision
            .allowed()
            .unwrap_or_else(|| panic!("{sql} allowed"));
        assert_eq!(allowed.cap_form, form, "{sql}");
        let rows = run_read(&pools, allowed, allowed.cap_form, 10)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(
            (rows.rows.len(), rows.truncated.is_some()),
            (10, true),
            "{sql}"
        );
    }
}

/// Runs an allowed read with its row cap in the form `cap`, at most `max_rows` rows.
async fn run_read(
    pools: &pool::SourcePools,
    allowed: &interlock::governance::Allowed,
    cap: CapForm,
    max_rows: u64,
) -> Result<Rows, execute::ExecError> {
    let token = tokio_util::sync::CancellationToken::new();
    execute::run(
        pools,
        Mode::read(allowed.explain, cap),
        &allowed.statement,
        &[] as &[TextParam],
        Limits {
            max_rows,
            max_bytes: 4 << 20,
        },
        &token,
        None,
    )
    .await
}

/// Whether two runs of one read returned the same columns and rows (as multisets: without
/// an ORDER BY the order is PostgreSQL's to choose) and the same truncation; under a cap
/// that truncates, or of a statement that reads the clock, only the number of rows is
/// compared (which rows is PostgreSQL's choice; the clock moved between the two runs).
fn same_result(
    a: Result<Rows, execute::ExecError>,
    b: Result<Rows, execute::ExecError>,
    cap: u64,
    non_deterministic: bool,
) -> Result<(), String> {
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            let (a, b) = (
                a.err().map(|e| e.to_string()),
                b.err().map(|e| e.to_string()),
            );
            return match a == b {
                true => Ok(()),
                false => Err(format!("appended {a:?}, wrapped {b:?}")),
            };
        }
    };
    if a.columns != b.columns {
        return Err(format!("columns {:?} against {:?}", a.columns, b.columns));
    }
    if a.truncated.is_some() != b.truncated.is_some() || a.rows.len() != b.rows.len() {
        return Err(format!(
            "{} rows (truncated {}) against {} (truncated {})",
            a.rows.len(),
            a.truncated.is_some(),
            b.rows.len(),
            b.truncated.is_some()
        ));
    }
    let sorted = |rows: &[Vec<Value>]| {
        let mut rows: Vec<String> = rows
            .iter()
            .map(|r| Value::from(r.clone()).to_string())
            .collect();
        rows.sort();
        rows
    };
    if a.truncated.is_none() && !non_deterministic && sorted(&a.rows) != sorted(&b.rows) {
        return Err(format!("rows differ (cap {cap})"));
    }
    Ok(())
}

#[test]
fn unescaping_follows_the_corpus_format() {
    let ok = [
        (r"a\\b", "a\\b"),
        (r"x\ny", "x\ny"),
        (r"\t", "\t"),
        (r"\0", "\0"),
        (r"\u202E", "\u{202E}"),
        ("É；", "É；"),
    ];
    for (input, want) in ok {
        assert_eq!(
            sqlfixture::corpus::unescape(input).as_deref(),
            Ok(want),
            "{input}"
        );
    }
    for bad in [r"\x", r"\u12", r"\"] {
        assert!(
            sqlfixture::corpus::unescape(bad).is_err(),
            "{bad} must be a format error"
        );
    }
}
