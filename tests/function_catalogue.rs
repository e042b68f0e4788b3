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
       EXISTS (SELECT 1 FROM pg_cast c WHERE c.castfunc = p.oid),
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
            aggregate_step: r.get(13),
            type_routine: r.get(14),
            index_support: r.get(15),
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
