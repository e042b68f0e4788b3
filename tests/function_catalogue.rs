//! The function catalogue is PostgreSQL's, classified: derived here from a live server's
//! `pg_proc` with the rules of `src/sql/functions/classify.rs`, and compared with the
//! checked-in table (`src/sql/functions/catalogue.rs`) and its rendering
//! (`docs/functions.md`). A new PostgreSQL version, a new function or a changed rule fails
//! this test until the diff is reviewed and blessed with
//! `INTERLOCK_BLESS=1 cargo test --test function_catalogue`.
//!
//! Then every allowed overload is called, with typical arguments of its types, as the
//! source's read-only role inside a read-only transaction: none may need a privilege, write,
//! or leave anything on the session.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use interlock::sql::functions::classify::{self, ProcRow, TypeInfo};
use interlock::sql::functions::{self as catalogue, render};

const PROCS: &str = r"
SELECT p.proname::text, p.prokind::text, a.aggkind::text, p.provolatile::text,
       p.proparallel::text, p.proretset, p.prosecdef,
       ARRAY(SELECT t.typname::text || ':' || t.typtype::text || ':' || t.typcategory::text
               FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(o, n)
               JOIN pg_type t ON t.oid = u.o ORDER BY u.n),
       (SELECT t.typname::text || ':' || t.typtype::text || ':' || t.typcategory::text
          FROM pg_type t WHERE t.oid = p.prorettype),
       ARRAY(SELECT u.n::text FROM unnest(p.proargmodes, p.proargnames) WITH ORDINALITY u(m, n, i)
              WHERE u.m IN ('o', 't', 'b') ORDER BY u.i),
       (l.lanname = 'sql' AND (p.prosrc || coalesce(pg_get_function_sqlbody(p.oid), ''))
            ~* '(\mpg_(?!catalog\M)|\mfrom\M|current_setting)'),
       EXISTS (SELECT 1 FROM pg_operator o WHERE o.oprcode = p.oid),
       EXISTS (SELECT 1 FROM pg_cast c WHERE c.castfunc = p.oid AND c.castsource <> c.casttarget),
       EXISTS (SELECT 1 FROM pg_cast c WHERE c.castfunc = p.oid AND c.castsource = c.casttarget),
       EXISTS (SELECT 1 FROM pg_aggregate g WHERE p.oid IN (g.aggtransfn, g.aggfinalfn,
               g.aggcombinefn, g.aggserialfn, g.aggdeserialfn, g.aggmtransfn, g.aggminvtransfn,
               g.aggmfinalfn)),
       EXISTS (SELECT 1 FROM pg_type t WHERE p.oid IN (t.typinput, t.typoutput, t.typreceive,
               t.typsend, t.typmodin, t.typmodout, t.typanalyze)),
       EXISTS (SELECT 1 FROM pg_amproc ap WHERE ap.amproc = p.oid)
  FROM pg_proc p
  JOIN pg_language l ON l.oid = p.prolang
  LEFT JOIN pg_aggregate a ON a.aggfnoid = p.oid
 WHERE p.pronamespace = 'pg_catalog'::regnamespace
 ORDER BY p.oid";

fn type_info(s: &str) -> TypeInfo {
    let mut parts = s.rsplitn(3, ':');
    let category = parts.next().and_then(|c| c.chars().next()).unwrap_or(' ');
    let typtype = parts.next().and_then(|c| c.chars().next()).unwrap_or(' ');
    TypeInfo {
        name: parts.next().unwrap_or_default().to_string(),
        typtype,
        category,
    }
}

fn ch(s: String) -> char {
    s.chars().next().unwrap_or(' ')
}

async fn proc_rows(db: &tokio_postgres::Client) -> Vec<ProcRow> {
    db.query(PROCS, &[])
        .await
        .expect("pg_proc")
        .iter()
        .map(|r| ProcRow {
            name: r.get(0),
            kind: ch(r.get(1)),
            agg_kind: r.get::<_, Option<String>>(2).map(ch),
            volatility: ch(r.get(3)),
            parallel: ch(r.get(4)),
            returns_set: r.get(5),
            security_definer: r.get(6),
            args: r
                .get::<_, Vec<String>>(7)
                .iter()
                .map(|s| type_info(s))
                .collect(),
            result: type_info(&r.get::<_, String>(8)),
            out_columns: r.get(9),
            body_reads_catalog: r.get(10),
            implements_operator: r.get(11),
            casts: r.get(12),
            length_coercion: r.get(13),
            aggregate_step: r.get(14),
            type_routine: r.get(15),
            index_support: r.get(16),
        })
        .collect()
}

fn repo(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[tokio::test]
async fn the_checked_in_catalogue_is_what_postgresql_lists_classified() {
    let db = common::admin("postgres").await;
    let version: String = db
        .query_one(
            "SELECT 'PostgreSQL ' || current_setting('server_version_num')::int / 10000",
            &[],
        )
        .await
        .expect("version")
        .get(0);
    let classified = classify::classify(&proc_rows(&db).await);
    let rust = render::catalogue_rs(&version, &classified);
    let docs = render::markdown(&version, &classified);
    let targets = [
        (repo("src/sql/functions/catalogue.rs"), rust),
        (repo("docs/functions.md"), docs),
    ];
    if std::env::var_os("INTERLOCK_BLESS").is_some() {
        for (path, text) in &targets {
            std::fs::write(path, text).expect("write");
        }
        return;
    }
    for (path, text) in &targets {
        let checked_in = std::fs::read_to_string(path).unwrap_or_default();
        if &checked_in != text {
            let diff: Vec<String> = text
                .lines()
                .zip(checked_in.lines().chain(std::iter::repeat("<missing>")))
                .filter(|(a, b)| a != b)
                .take(20)
                .map(|(now, was)| format!("derived: {now}\nchecked: {was}"))
                .collect();
            panic!(
                "{} differs from what {version}'s pg_proc classifies to; review and bless with \
                 INTERLOCK_BLESS=1 cargo test --test function_catalogue\n{}",
                path.display(),
                diff.join("\n")
            );
        }
    }
    assert_eq!(catalogue::derived_from(), version);
}

/// A typical value of a type, written with its type so PostgreSQL picks the overload meant.
fn sample(type_name: &str) -> Option<String> {
    if let Some(element) = type_name.strip_prefix('_') {
        return sample(element).map(|v| format!("ARRAY[{v}]"));
    }
    Some(
        match type_name {
            "int2" => "2::int2",
            "int4" => "3",
            "int8" => "4::int8",
            "numeric" => "1.5::numeric",
            "float4" => "0.5::float4",
            "float8" => "0.5::float8",
            "text" => "'abc'::text",
            "varchar" => "'abc'::varchar",
            "bpchar" => "'abc'::bpchar",
            "name" => "'abc'::name",
            "char" => "'a'::\"char\"",
            "bool" => "true",
            "date" => "date '2024-01-31'",
            "time" => "time '12:34:56'",
            "timetz" => "timetz '12:34:56+02'",
            "timestamp" => "timestamp '2024-01-31 12:00'",
            "timestamptz" => "timestamptz '2024-01-31 12:00+00'",
            "interval" => "interval '1 day 2 hours'",
            "json" => "'{\"a\": [1, 2]}'::json",
            "jsonb" => "'{\"a\": [1, 2]}'::jsonb",
            "jsonpath" => "'$.a[*]'::jsonpath",
            "bytea" => "'\\x0102'::bytea",
            "bit" => "B'101'",
            "varbit" => "B'101'::varbit",
            "inet" => "inet '10.0.0.1/8'",
            "cidr" => "cidr '10.0.0.0/8'",
            "macaddr" => "macaddr '08:00:2b:01:02:03'",
            "macaddr8" => "macaddr8 '08:00:2b:01:02:03:04:05'",
            "point" => "point '(1,2)'",
            "lseg" => "lseg '[(0,0),(1,1)]'",
            "line" => "line '{1,-1,0}'",
            "box" => "box '((0,0),(1,1))'",
            "path" => "path '((0,0),(1,1),(2,0))'",
            "polygon" => "polygon '((0,0),(1,1),(1,0))'",
            "circle" => "circle '<(0,0),1>'",
            "tsvector" => "'a:1 b:2'::tsvector",
            "tsquery" => "'a & b'::tsquery",
            "regconfig" => "'english'::regconfig",
            "regdictionary" => "'simple'::regdictionary",
            "uuid" => "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid",
            "money" => "12.5::money",
            "int4range" | "anyrange" | "anycompatiblerange" => "int4range(1, 5)",
            "int8range" => "int8range(1, 5)",
            "numrange" => "numrange(1, 5)",
            "daterange" => "daterange('2024-01-01', '2024-02-01')",
            "tsrange" => "tsrange('2024-01-01', '2024-02-01')",
            "tstzrange" => "tstzrange('2024-01-01', '2024-02-01')",
            "int4multirange" | "anymultirange" | "anycompatiblemultirange" => {
                "int4multirange(int4range(1, 5))"
            }
            "int8multirange" => "int8multirange(int8range(1, 5))",
            "nummultirange" => "nummultirange(numrange(1, 5))",
            "datemultirange" => "datemultirange(daterange('2024-01-01', '2024-02-01'))",
            "tsmultirange" => "tsmultirange(tsrange('2024-01-01', '2024-02-01'))",
            "tstzmultirange" => "tstzmultirange(tstzrange('2024-01-01', '2024-02-01'))",
            "anyarray" | "anycompatiblearray" => "ARRAY[1, 2, 3]",
            "anyelement" | "anycompatible" | "anynonarray" | "anycompatiblenonarray" | "any" => "1",
            "anyenum" => "'b'::catalogue_mood",
            "record" => "ROW(1, 2)",
            "unknown" => "'abc'",
            _ => return None,
        }
        .to_string(),
    )
}

const OVERLOADS: &str = r"
SELECT p.proname::text, p.prokind::text, coalesce(a.aggkind::text, ''),
       coalesce(a.aggnumdirectargs::int, 0), p.proretset, p.provariadic <> 0,
       ARRAY(SELECT t.typname::text FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(o, n)
               JOIN pg_type t ON t.oid = u.o ORDER BY u.n),
       p.oid::regprocedure::text
  FROM pg_proc p LEFT JOIN pg_aggregate a ON a.aggfnoid = p.oid
 WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.proname = ANY($1)
 ORDER BY p.oid";

/// SQLSTATE classes a call may end in with typical arguments: a value out of its domain
/// (22, and 42601 for an option string such as a range's bound flags that does not parse),
/// an unsupported combination (0A), a program limit (54), or the sample's type not matching
/// a polymorphic signature (42804, 42883, 42725, 42P18, 42P13, 42846).
fn tolerated(code: &str) -> bool {
    code == "42601"
        || code.starts_with("22")
        || code.starts_with("0A")
        || code.starts_with("54")
        || code.starts_with("2202")
        || ["42804", "42883", "42725", "42P18", "42P13", "42846"].contains(&code)
}

#[tokio::test]
async fn every_allowed_function_runs_under_a_role_without_privileges_and_changes_nothing() {
    let db_name = common::fresh_database("catalogue_calls").await;
    let db = common::admin(&db_name).await;
    db.batch_execute(
        "CREATE TYPE catalogue_mood AS ENUM ('a', 'b', 'c');
         DO $$ BEGIN CREATE ROLE catalogue_caller NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;",
    )
    .await
    .expect("setup");
    let names: Vec<String> = catalogue::allowed().map(|e| e.name.to_string()).collect();
    let overloads = db.query(OVERLOADS, &[&names]).await.expect("overloads");
    let session_state = "SELECT coalesce(string_agg(name || '=' || setting, ',' ORDER BY name), '')
                           || '/' || (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid()
                                      AND locktype = 'advisory')
                           || '/' || coalesce(pg_current_xact_id_if_assigned()::text, 'none')
                         FROM pg_settings WHERE source = 'session'";
    db.batch_execute("BEGIN READ ONLY; SET LOCAL ROLE catalogue_caller")
        .await
        .expect("begin");
    let before: String = db
        .query_one(session_state, &[])
        .await
        .expect("state")
        .get(0);
    let (mut ran, mut typed_out, mut forbidden, mut skipped) = (0, 0, Vec::new(), 0);
    for r in &overloads {
        let (name, kind, agg_kind): (String, String, String) = (r.get(0), r.get(1), r.get(2));
        let direct = usize::try_from(r.get::<_, i32>(3)).unwrap_or(0);
        let (set, variadic): (bool, bool) = (r.get(4), r.get(5));
        let types: Vec<String> = r.get(6);
        let signature: String = r.get(7);
        let Some(mut args) = types.iter().map(|t| sample(t)).collect::<Option<Vec<_>>>() else {
            skipped += 1;
            continue;
        };
        if variadic {
            if let (Some(last), Some(t)) = (args.last_mut(), types.last()) {
                if t != "any" {
                    *last = format!("VARIADIC {last}");
                }
            }
        }
        let f = format!("pg_catalog.\"{name}\"");
        let sql = match (kind.as_str(), agg_kind.as_str()) {
            ("a", "o" | "h") => {
                let split = direct.min(args.len());
                let (d, o) = args.split_at(split);
                let order = if o.is_empty() {
                    "1".to_string()
                } else {
                    o.join(", ")
                };
                format!(
                    "SELECT {f}({}) WITHIN GROUP (ORDER BY {order}) FROM generate_series(1, 3)",
                    d.join(", ")
                )
            }
            ("a", _) if args.is_empty() => format!("SELECT {f}(*) FROM generate_series(1, 3)"),
            ("a", _) => format!("SELECT {f}({}) FROM generate_series(1, 3)", args.join(", ")),
            ("w", _) => format!(
                "SELECT {f}({}) OVER () FROM generate_series(1, 3)",
                args.join(", ")
            ),
            _ if set => format!("SELECT {f}({}) LIMIT 5", args.join(", ")),
            _ => format!("SELECT {f}({})", args.join(", ")),
        };
        db.batch_execute("SAVEPOINT call").await.expect("savepoint");
        // Parsed and analysed first: a statement this test wrote badly (a syntax error, an
        // overload the sample types do not reach) never counts as a call that ran.
        let prepared = match db.prepare(&sql).await {
            Ok(statement) => statement,
            Err(e) => {
                let code = e.code().map(|c| c.code().to_string()).unwrap_or_default();
                assert!(code.starts_with("42"), "{signature}: {code} {e} — {sql}");
                typed_out += 1;
                db.batch_execute("ROLLBACK TO SAVEPOINT call")
                    .await
                    .expect("rollback to");
                continue;
            }
        };
        match db.query(&prepared, &[]).await {
            Ok(_) => {
                ran += 1;
                db.batch_execute("RELEASE SAVEPOINT call")
                    .await
                    .expect("release");
            }
            Err(e) => {
                let code = e.code().map(|c| c.code().to_string()).unwrap_or_default();
                if code.starts_with("42") && code != "42601" && tolerated(&code) {
                    // A type the sample did not fit, found only when the value was read.
                    typed_out += 1;
                } else if tolerated(&code) {
                    ran += 1;
                } else {
                    forbidden.push(format!("{signature}: {code} {e} — {sql}"));
                }
                db.batch_execute("ROLLBACK TO SAVEPOINT call")
                    .await
                    .expect("rollback to");
            }
        }
    }
    let after: String = db
        .query_one(session_state, &[])
        .await
        .expect("state")
        .get(0);
    db.batch_execute("ROLLBACK").await.expect("rollback");
    let total = overloads.len();
    eprintln!("{ran} of {total} allowed overloads ran, {typed_out} refused the typical arguments, {skipped} without a sample");
    assert!(
        forbidden.is_empty(),
        "allowed functions that need a privilege, write, or fail unexpectedly:\n{}",
        forbidden.join("\n")
    );
    assert_eq!(
        before, after,
        "the calls changed the session's settings, locks or xid"
    );
    assert!(
        ran * 10 >= total * 8,
        "only {ran} of {total} allowed overloads ran ({typed_out} did not accept the typical \
         arguments, {skipped} have argument types without a sample)"
    );
}
