//! The effects of a consumer world on PostgreSQL: a table of its own in
//! the world's schema, one row an order, counting the times its effect was
//! applied.

use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, PgPool, Postgres};

use super::Effects;

/// The effects table of one world's schema.
///
/// A world's `apply` runs [`apply`](Self::apply) in the handler's
/// transaction; `effects` and `teardown` are [`effects`](Self::effects)
/// and [`drop_schema`](Self::drop_schema).
#[derive(Debug, Clone)]
pub struct PgEffects {
    pool: PgPool,
    schema: String,
    upsert: String,
}

impl PgEffects {
    /// Creates the table in `schema`, which must exist.
    pub async fn create(pool: PgPool, schema: &str) -> Self {
        let create = format!(
            "create table \"{schema}\".effects (order_id int primary key, times int not null)"
        );
        sqlx::query(AssertSqlSafe(create))
            .execute(&pool)
            .await
            .expect("create the effects table");
        let upsert = format!(
            "insert into \"{schema}\".effects (order_id, times) values ($1, 1) \
             on conflict (order_id) do update set times = effects.times + 1"
        );
        Self {
            pool,
            schema: schema.to_owned(),
            upsert,
        }
    }

    /// The statement adding one to order `id`'s effects, to run in the
    /// handler's transaction.
    pub fn apply(&self, id: u32) -> Query<'static, Postgres, PgArguments> {
        sqlx::query(AssertSqlSafe(self.upsert.clone()))
            .bind(i32::try_from(id).expect("a small order id"))
    }

    /// The effects committed so far.
    pub async fn effects(&self) -> Effects {
        let sql = format!(
            "select count(*), coalesce(max(times), 0) from \"{}\".effects",
            self.schema
        );
        let (orders, most): (i64, i32) = sqlx::query_as(AssertSqlSafe(sql))
            .fetch_one(&self.pool)
            .await
            .expect("count the effects");
        Effects {
            orders: u64::try_from(orders).unwrap_or_default(),
            most: u64::try_from(most).unwrap_or_default(),
        }
    }

    /// Drops the world's whole schema.
    pub async fn drop_schema(&self) {
        crate::services::drop_schema(&self.pool, &self.schema).await;
    }
}
