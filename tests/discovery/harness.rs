//! Discovery tests run on the shared test cluster (tests/common): each test gets a fresh,
//! migrated control database holding three sources: `handbook` and `wiki` (documents) and
//! `shop` (postgres).

use deadpool_postgres::Pool;

#[path = "../common/mod.rs"]
mod common;

pub async fn fresh_db() -> Pool {
    let db = common::fresh_control_db().await;
    let pool = interlock::control::connect_pool(&common::settings_for(&db).control).expect("pool");
    let client = pool.get().await.expect("connect to test database");
    client
        .batch_execute(
            "INSERT INTO sources (id, kind, mask_key) VALUES
                ('handbook', 'documents', decode(repeat('ab', 32), 'hex')),
                ('wiki', 'documents', decode(repeat('cd', 32), 'hex'));
             INSERT INTO sources (id, kind, host, port, dbname, read_user, mask_key) VALUES
                ('shop', 'postgres', '127.0.0.1', 5432, 'shop', 'reader', decode(repeat('ef', 32), 'hex'));",
        )
        .await
        .expect("seed sources");
    pool
}
