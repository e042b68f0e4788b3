//! The differential test of SQL name resolution against PostgreSQL itself: a seeded
//! generator (`gen`) over a schema of colliding names (`schema`), PostgreSQL's plan as
//! the oracle (`plan`), the textual facts of hand-written statements (`facts`), and both
//! sides of each case compared (`oracle`).
#![allow(dead_code)]

pub mod facts;
pub mod gen;
pub mod oracle;
pub mod plan;
pub mod schema;
