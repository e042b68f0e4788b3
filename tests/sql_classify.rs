//! Statement classification, as a table: read, write, or a forbidden kind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use interlock::sql::{classify, parse, ForbiddenKind, StatementClass};

#[test]
fn classification_table() {
    use ForbiddenKind as K;
    use StatementClass::{Forbidden as F, Read, Write};
    let cases = [
        ("SELECT 1", Read),
        ("VALUES (1)", Read),
        ("WITH x AS (SELECT 1) SELECT * FROM x", Read),
        ("INSERT INTO t VALUES (1)", Write),
        ("UPDATE t SET a = 1", Write),
        ("DELETE FROM t", Write),
        ("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE", Write),
        ("WITH d AS (DELETE FROM t RETURNING id) SELECT * FROM d", Write),
        ("WITH x AS (SELECT 1) DELETE FROM t", Write),
        ("EXPLAIN DELETE FROM t", Read),
        ("EXPLAIN ANALYZE DELETE FROM t", Write),
        ("EXPLAIN (ANALYZE yes) DELETE FROM t", Write),
        ("EXPLAIN (ANALYZE 1) DELETE FROM t", Write),
        ("EXPLAIN (ANALYZE false) DELETE FROM t", Read),
        ("EXPLAIN ANALYZE SELECT 1", Read),
        ("SELECT * FROM (WITH d AS (DELETE FROM t RETURNING 1) SELECT 1) s", F(K::NestedDml)),
        ("SELECT 1 FROM t WHERE a IN (WITH d AS (UPDATE t SET a = 1 RETURNING a) SELECT a FROM d)", F(K::NestedDml)),
        ("SELECT a FROM t FOR UPDATE", F(K::LockingClause)),
        ("SELECT (SELECT a FROM t FOR SHARE)", F(K::LockingClause)),
        ("SELECT * INTO x FROM t", F(K::TableCreation)),
        ("CREATE TABLE x AS SELECT 1", F(K::TableCreation)),
        ("CREATE TEMP TABLE x (a int)", F(K::TableCreation)),
        ("CREATE TABLE x (a int)", F(K::Ddl)),
        ("COPY t TO STDOUT", F(K::Copy)),
        ("CALL p()", F(K::Procedural)),
        ("PREPARE p AS SELECT 1", F(K::PreparedStatement)),
        ("EXECUTE p", F(K::PreparedStatement)),
        ("DEALLOCATE ALL", F(K::PreparedStatement)),
        ("DECLARE c CURSOR FOR SELECT 1", F(K::Cursor)),
        ("FETCH NEXT FROM c", F(K::Cursor)),
        ("CLOSE c", F(K::Cursor)),
        ("BEGIN", F(K::TransactionControl)),
        ("COMMIT", F(K::TransactionControl)),
        ("SAVEPOINT s", F(K::TransactionControl)),
        ("SET search_path = x", F(K::SessionState)),
        ("RESET ALL", F(K::SessionState)),
        ("SHOW search_path", F(K::SessionState)),
        ("DISCARD ALL", F(K::SessionState)),
        ("LISTEN c", F(K::Notification)),
        ("NOTIFY c", F(K::Notification)),
        ("UNLISTEN *", F(K::Notification)),
        ("LOCK TABLE t", F(K::LockTable)),
        ("VACUUM t", F(K::Maintenance)),
        ("ANALYZE t", F(K::Maintenance)),
        ("REFRESH MATERIALIZED VIEW m", F(K::Maintenance)),
        ("TRUNCATE t", F(K::Truncate)),
        ("COMMENT ON TABLE t IS 'x'", F(K::Comment)),
        ("DROP TABLE t", F(K::Ddl)),
        ("ALTER TABLE t ADD COLUMN b int", F(K::Ddl)),
        ("GRANT SELECT ON t TO r", F(K::Dcl)),
        ("CREATE ROLE r", F(K::Dcl)),
        ("CREATE EXTENSION dblink", F(K::ServerControl)),
        ("LOAD 'x'", F(K::ServerControl)),
    ];
    let mut failures = Vec::new();
    for (sql, want) in cases {
        match parse(sql, 0, &interlock::sql::parse::ParseLimits::default()) {
            Ok(parsed) => {
                let got = classify(&parsed.statement).class;
                if got != want {
                    failures.push(format!("{sql}: want {want:?}, got {got:?}"));
                }
            }
            Err(e) => failures.push(format!("{sql}: did not parse: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
