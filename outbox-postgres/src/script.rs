//! The migrations as one SQL script, for schemas a DBA's own tool
//! (Flyway, Liquibase, sqlx-migrate, `psql`) applies.

use crate::PgOutboxStore;

impl PgOutboxStore {
    /// Every migration this store's [`migrate`](Self::migrate) applies to
    /// an empty schema, as one SQL script for this store's schema, table
    /// names and layout: the schema, the migrations table, then each
    /// migration followed by the row that records it, so that
    /// [`verify`](Self::verify) accepts the schema the script built.
    ///
    /// The script is meant for a schema without tidings' tables and is
    /// best run in one transaction (`psql --single-transaction -f`). Unlike
    /// [`migrate`](Self::migrate) it takes no lock and does not check for
    /// clashing tables; run it once.
    ///
    /// ```
    /// # use tidings_postgres::{PgOutboxOptions, PgOutboxStore};
    /// # use tidings_postgres::sqlx::postgres::PgPoolOptions;
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let pool = PgPoolOptions::new().connect_lazy("postgres://localhost/app").unwrap();
    /// let store = PgOutboxStore::new(pool, PgOutboxOptions::new().schema("billing")).unwrap();
    /// let script = store.migration_script();
    /// assert!(script.contains(r#"create table "billing"."tidings_outbox""#));
    /// # }
    /// ```
    pub fn migration_script(&self) -> String {
        let sql = &self.inner().sql;
        let names = &self.inner().names;
        let migrations = names.qualified(&names.migrations_table());
        let mut script = format!(
            "-- tidings schema for {} (outbox {}, inbox {})\n\n{};\n\n{};\n",
            names.schema,
            names.outbox,
            names.inbox,
            sql.create_schema.as_str().trim_end(),
            sql.create_migrations.as_str().trim_end(),
        );
        for (migration, statement) in &sql.migrations {
            // The version and name are this crate's constants, never input.
            script.push_str(&format!(
                "\n-- migration {}\n{};\ninsert into {migrations} (version, name) values ({}, '{}');\n",
                migration.name,
                statement.as_str().trim_end(),
                migration.version,
                migration.name,
            ));
        }
        script
    }
}
