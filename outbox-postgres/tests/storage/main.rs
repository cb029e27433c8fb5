//! Where and how the store keeps its rows on PostgreSQL: staging in the
//! caller's transaction, table names and migrations, stores sharing a
//! schema, and the rotated outbox.
//!
//! - `rotation`: the rotated outbox, its conversion and truncation.
//! - `schema`: table names, migrations and the startup check.
//! - `shared_schema`: several stores in one schema, and names that clash.
//! - `staging`: staging through a `PgContext`.

#[path = "../support/mod.rs"]
mod support;

mod rotation;
mod schema;
mod shared_schema;
mod staging;
