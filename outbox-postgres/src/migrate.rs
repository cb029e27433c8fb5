//! Versioned migrations, safe to run from several processes at once, and
//! the startup check.

use std::collections::HashSet;

use sqlx::{Connection, PgConnection};
use tidings_core::StoreError;
use tracing::{info, instrument};

use crate::Layout;
use crate::PgOutboxStore;
use crate::error::{migration_error, store_error};
use crate::sql::{Target, schema_version};

impl PgOutboxStore {
    /// Creates the schema, the outbox and inbox tables and their indexes, or
    /// brings them up to date. Returns how many migrations it applied: 0
    /// when the schema was already current.
    ///
    /// Idempotent and safe to run from several processes at once: the whole
    /// run is one transaction holding an advisory lock on the schema, so
    /// concurrent runs wait for each other and find nothing left to do.
    ///
    /// With [log tailing](crate::PgOutboxOptions::log_tailing) it then
    /// creates the publication and the replication slot where missing, and
    /// records where a new slot starts, so that a slot lost and created
    /// again is noticed.
    ///
    /// Several outbox tables may share a schema, and an inbox table: each
    /// records its own migrations in `<table>_migrations`, and the inbox is
    /// made by the first of them to migrate and adopted by the others.
    ///
    /// # Errors
    ///
    /// [`StoreError::Schema`] when a table or index in the schema already
    /// has a name this store needs (its outbox table, `<table>_migrations`,
    /// `<table>_claims`, `<table>_*_idx`, and an inbox table or its
    /// `<inbox>_age_idx` that is not a tidings inbox); nothing is applied
    /// then. [`StoreError::Misconfigured`] when the pool reaches
    /// PostgreSQL through a pooler in transaction mode and the store was
    /// not built with [`Pooling::Transaction`](crate::Pooling::Transaction)
    /// (checked when the pool has a second connection to spare), or, with
    /// log tailing, when the server's `wal_level` is not `logical` or the
    /// slot is not a pgoutput slot of this database; [`StoreError::Schema`]
    /// when the publication exists and does not publish the outbox table.
    /// Errors of the connection as elsewhere.
    #[instrument(skip_all, fields(db.system = "postgresql", db.namespace = %self.inner().names.schema), err)]
    pub async fn migrate(&self) -> Result<usize, StoreError> {
        crate::pooling::detect_pooler(self).await?;
        let inner = self.inner();
        if inner.tailing.is_some() {
            self.check_wal_level().await?;
        }
        let sql = &inner.sql;
        let mut conn = inner.pool.acquire().await.map_err(store_error)?;
        let mut tx = conn.begin().await.map_err(store_error)?;
        sqlx::query(sql.migrate_lock.clone())
            .persistent(self.persistent())
            .bind(inner.names.migration_lock())
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        let schema_exists: bool = sqlx::query_scalar(sql.schema_exists.clone())
            .persistent(self.persistent())
            .bind(&inner.names.schema)
            .fetch_one(&mut *tx)
            .await
            .map_err(store_error)?;
        if !schema_exists {
            sqlx::query(sql.create_schema.clone())
                .persistent(self.persistent())
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
        }
        sqlx::query(sql.create_migrations.clone())
            .persistent(self.persistent())
            .execute(&mut *tx)
            .await
            .map_err(store_error)?;
        let applied: HashSet<i32> = sqlx::query_scalar(sql.applied_migrations.clone())
            .persistent(self.persistent())
            .fetch_all(&mut *tx)
            .await
            .map_err(store_error)?
            .into_iter()
            .collect();
        let pending: Vec<_> = sql
            .migrations
            .iter()
            .filter(|(migration, _)| !applied.contains(&migration.version))
            .collect();
        if pending.iter().any(|(m, _)| m.target == Target::Inbox) {
            self.check_shared_inbox(&mut tx).await?;
        }
        for (migration, statement) in &pending {
            sqlx::query(statement.clone())
                .persistent(self.persistent())
                .execute(&mut *tx)
                .await
                .map_err(|e| migration_error(e, migration.name, &inner.names.schema))?;
            sqlx::query(sql.record_migration.clone())
                .persistent(self.persistent())
                .bind(migration.version)
                .bind(migration.name)
                .execute(&mut *tx)
                .await
                .map_err(store_error)?;
            info!(
                version = migration.version,
                name = migration.name,
                "migration applied"
            );
        }
        self.check_layout(&mut tx).await?;
        tx.commit().await.map_err(store_error)?;
        // A slot cannot be created in a transaction that wrote anything.
        if inner.tailing.is_some() {
            self.prepare_tailing().await?;
        }
        Ok(pending.len())
    }

    /// Fails with [`StoreError::Schema`] when the outbox is laid out
    /// otherwise than this store's options say.
    async fn check_layout(&self, conn: &mut PgConnection) -> Result<(), StoreError> {
        let names = &self.inner().names;
        let outbox = names.qualified(&names.outbox);
        let rotated: bool = sqlx::query_scalar(self.inner().sql.outbox_rotated.clone())
            .persistent(self.persistent())
            .bind(&outbox)
            .fetch_one(&mut *conn)
            .await
            .map_err(store_error)?;
        match (self.options().get_layout(), rotated) {
            (Layout::Plain, true) => Err(StoreError::Schema(format!(
                "the outbox {outbox} is rotated; open it with PgOutboxOptions::layout(Layout::Rotated)"
            ))),
            (Layout::Rotated, false) => Err(StoreError::Schema(format!(
                "the outbox {outbox} is a plain table; run PgOutboxStore::migrate() with \
                 Layout::Rotated to convert it"
            ))),
            _ => Ok(()),
        }
    }

    /// Before the inbox's migrations run: what already stands under the
    /// inbox's names must be the inbox and its index, made by another
    /// outbox table sharing them, or nothing. Anything else is a clash.
    async fn check_shared_inbox(&self, tx: &mut PgConnection) -> Result<(), StoreError> {
        let names = &self.inner().names;
        let inbox = names.qualified(&names.inbox);
        let age_index = names.qualified(&format!("{}_age_idx", names.inbox));
        let (inbox_exists, is_inbox, age_exists, age_on_inbox): (bool, bool, bool, bool) =
            sqlx::query_as(self.inner().sql.inbox_found.clone())
                .persistent(self.persistent())
                .bind(&inbox)
                .bind(&age_index)
                .fetch_one(&mut *tx)
                .await
                .map_err(store_error)?;
        let clash = if inbox_exists && !is_inbox {
            Some((
                inbox,
                "an inbox table (keyed by consumer text and event_id uuid)",
            ))
        } else if age_exists && !age_on_inbox {
            Some((age_index, "the inbox's age index"))
        } else {
            None
        };
        match clash {
            Some((relation, expected)) => Err(StoreError::Schema(format!(
                "relation {relation} already exists and is not {expected}; \
                 give the inbox another name with PgOutboxOptions::inbox_table"
            ))),
            None => Ok(()),
        }
    }

    /// The startup check: the tables, the claim index and the schema's
    /// version and layout are what this build needs.
    ///
    /// # Errors
    ///
    /// [`StoreError::Schema`], naming what is missing, when the tables or
    /// the claim index do not exist, the schema is older than this build
    /// needs, or the outbox is laid out otherwise than the options say;
    /// [`StoreError::Misconfigured`] as [`migrate`](Self::migrate) does
    /// behind an unannounced transaction pooler; [`StoreError::Unavailable`]
    /// when the database cannot be reached.
    #[instrument(skip_all, fields(db.system = "postgresql", db.namespace = %self.inner().names.schema), err)]
    pub async fn verify(&self) -> Result<(), StoreError> {
        crate::pooling::detect_pooler(self).await?;
        let inner = self.inner();
        let names = &inner.names;
        let migrations = names.qualified(&names.migrations_table());
        let expected = [
            ("outbox table", names.qualified(&names.outbox)),
            (
                "outbox claim index",
                names.qualified(&format!("{}_claim_idx", names.outbox)),
            ),
            ("inbox table", names.qualified(&names.inbox)),
            (
                "inbox attempts table",
                names.qualified(&names.attempts_table()),
            ),
            ("migrations table", migrations),
        ];
        let relations: Vec<&str> = expected.iter().map(|(_, name)| name.as_str()).collect();
        let mut session = self.session().await.map_err(store_error)?;
        let found: Vec<bool> = sqlx::query_scalar(inner.sql.find_relations.clone())
            .persistent(self.persistent())
            .bind(&relations)
            .fetch_all(&mut *session)
            .await
            .map_err(store_error)?;
        let missing: Vec<String> = expected
            .iter()
            .zip(&found)
            .filter(|(_, found)| !**found)
            .map(|((what, name), _)| format!("{what} {name}"))
            .collect();
        if !missing.is_empty() {
            return Err(StoreError::Schema(format!(
                "missing {}; the schema needs migrating",
                missing.join(", ")
            )));
        }
        let version: i32 = sqlx::query_scalar(inner.sql.schema_version.clone())
            .persistent(self.persistent())
            .fetch_one(&mut *session)
            .await
            .map_err(store_error)?;
        let needed = schema_version(self.options().get_layout());
        if version < needed {
            return Err(StoreError::Schema(format!(
                "schema {} is at version {version}, this build needs {needed}; the schema needs migrating",
                names.schema
            )));
        }
        self.check_layout(&mut session).await?;
        session.finish().await.map_err(store_error)?;
        Ok(())
    }
}
