//! The billing service the PostgreSQL examples share: an order and its
//! `order.placed` event commit together (one order in five rolls back,
//! taking its event with it), and a billing consumer writes one invoice
//! per order through the inbox. Each example wires it to its own broker.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tidings::consumer::Handler;
use tidings::postgres::sqlx::{self, AssertSqlSafe, postgres::PgPoolOptions};
use tidings::postgres::{PgContext, PgOutboxOptions, PgOutboxStore, Pooling};
use tidings::prelude::*;
use tidings::{Publisher, Source};

use crate::database::database_url;
use crate::orders::{OrderPlaced, check_invoices, print_invoice, run_while_placing};
use crate::placing::place_orders;

/// The route of the service's events into the queue [`ORDERS`], each
/// customer's events in order.
pub static ORDER_EVENTS: OutboxSpec<OrderPlaced> = OutboxSpec::json("order-events")
    .destination("tidings-example-orders")
    .per_key();

/// The queue the billing consumer reads.
pub static ORDERS: QueueSpec<OrderPlaced> = QueueSpec::json("tidings-example-orders");

/// The service's tables and outbox in a schema of its own.
#[derive(Debug, Clone)]
pub struct Billing {
    store: PgOutboxStore,
}

impl Billing {
    /// Recreates `schema` on the database at `DATABASE_URL` with the
    /// outbox, the inbox, orders and invoices.
    ///
    /// Behind a transaction pooler such as PgBouncer, set
    /// `DATABASE_POOLING=transaction`, and `DATABASE_LISTEN_URL` to the
    /// server's own address so the relay hears commits at once.
    ///
    /// # Errors
    ///
    /// When the database cannot be reached, `DATABASE_LISTEN_URL` does not
    /// parse, the store refuses the schema name, or dropping, migrating or
    /// creating the schema's tables fails.
    pub async fn open(schema: &'static str) -> anyhow::Result<Self> {
        let url = database_url();
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .connect(&url)
            .await
            .with_context(|| format!("connecting to {url}; run bash scripts/setup-services.sh"))?;
        let mut options = PgOutboxOptions::new().schema(schema);
        if std::env::var("DATABASE_POOLING").is_ok_and(|mode| mode == "transaction") {
            options = options.pooling(Pooling::Transaction);
        }
        if let Ok(direct) = std::env::var("DATABASE_LISTEN_URL") {
            options = options.listen_options(direct.parse()?);
        }
        // The store refuses a name that is not a plain identifier, so the
        // quoted name below is safe to use in SQL.
        let store = PgOutboxStore::new(pool, options)?;
        // Statements without parameters go by the simple protocol, which
        // any pooler carries.
        sqlx::raw_sql(AssertSqlSafe(format!(
            "drop schema if exists \"{schema}\" cascade"
        )))
        .execute(store.pool())
        .await?;
        store.migrate().await?;
        sqlx::raw_sql(AssertSqlSafe(format!(
            "create table \"{schema}\".orders (id bigserial primary key, amount_cents bigint not null); \
             create table \"{schema}\".invoices (order_id bigint primary key, amount_cents bigint not null)"
        )))
        .execute(store.pool())
        .await?;
        Ok(Self { store })
    }

    /// `table` in the service's schema, quoted.
    fn table(&self, table: &str) -> String {
        format!("\"{}\".{table}", self.store.options().get_schema())
    }

    /// Places the orders, each with its event of `spec` in one
    /// transaction; one in five rolls back. Returns how many committed.
    ///
    /// # Errors
    ///
    /// When a transaction cannot be opened, an insert, the staging of an event
    /// or a commit or rollback fails; orders committed before it stay.
    pub async fn place_orders(&self, spec: &OutboxSpec<OrderPlaced>) -> anyhow::Result<u64> {
        let insert = format!(
            "insert into {} (amount_cents) values ($1) returning id",
            self.table("orders")
        );
        place_orders(&self.store, &insert, spec, Duration::ZERO).await
    }

    /// The billing handler: the invoice commits with the inbox mark. An
    /// event for an order this database does not know can never succeed.
    pub fn handler(&self) -> impl Handler<OrderPlaced, PgContext<'static>> + use<> {
        let known = format!("select id from {} where id = $1", self.table("orders"));
        let invoice = format!(
            "insert into {} (order_id, amount_cents) values ($1, $2)",
            self.table("invoices")
        );
        handler_fn(
            move |msg: Message<OrderPlaced>, tx: TxHandle<PgContext<'static>>| {
                let (known, invoice) = (known.clone(), invoice.clone());
                async move {
                    let order = &msg.payload;
                    let mut ctx = tx.lock().await;
                    let found: Option<i64> = sqlx::query_scalar(AssertSqlSafe(known))
                        .persistent(false)
                        .bind(order.order_id)
                        .fetch_optional(ctx.tx())
                        .await?;
                    if found.is_none() {
                        let unknown = format!("unknown order {}", order.order_id);
                        return Err(HandlerError::permanent(unknown));
                    }
                    sqlx::query(AssertSqlSafe(invoice))
                        .persistent(false)
                        .bind(order.order_id)
                        .bind(order.amount_cents)
                        .execute(ctx.tx())
                        .await?;
                    print_invoice(&msg);
                    Ok(())
                }
            },
        )
    }

    /// Invoices written so far.
    ///
    /// # Errors
    ///
    /// When the invoices table cannot be read.
    pub async fn invoices(&self) -> anyhow::Result<u64> {
        let sql = format!("select count(*) from {}", self.table("invoices"));
        let count: i64 = sqlx::query_scalar(AssertSqlSafe(sql))
            .persistent(false)
            .fetch_one(self.store.pool())
            .await?;
        Ok(u64::try_from(count)?)
    }

    /// Runs the service on a broker while placing the orders: relays
    /// publish `events` through `publisher`, and the billing consumer reads
    /// `orders` from `source` and writes each invoice through the inbox.
    /// Stops once every committed order has its invoice or 30 s pass;
    /// prints what the consumer reports and fails when an invoice is
    /// missing.
    ///
    /// # Errors
    ///
    /// When `events` does not publish into `orders`, a name is refused,
    /// placing the orders fails, a step is still running once the plan's
    /// shutdown timeout has passed, or an invoice is missing after 30 s.
    pub async fn run<P, S>(
        &self,
        publisher: P,
        source: S,
        events: &'static OutboxSpec<OrderPlaced>,
        orders: &'static QueueSpec<OrderPlaced>,
    ) -> anyhow::Result<()>
    where
        P: Publisher + Clone,
        S: Source,
    {
        events.check_pair(orders)?;
        let relays = self.store.relays(publisher).route(events)?;
        let inbox = Inbox::new(self.store.inbox(), "billing")?;
        let consumer = Arc::new(Consumer::new(source, orders, self.handler())?.inbox(inbox));
        let plan = LifecyclePlan::new()
            .steps(relays)
            .step("billing", consumer.clone());
        let committed =
            run_while_placing(plan, self.place_orders(events), |committed| async move {
                self.invoices().await.is_ok_and(|n| n >= committed)
            })
            .await?;
        check_invoices(committed, self.invoices().await?, &consumer.report())
    }
}
