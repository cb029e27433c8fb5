//! Declaring what a queue needs: its exchange and binding, a dead-letter
//! exchange and queue, and the delay queue delayed redeliveries wait in.

use std::time::Duration;

use lapin::options::{
    ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{Channel, ExchangeKind};
use tidings_core::spec::validate_name;
use tidings_core::{OutboxSpec, QueueSpec};

use crate::connection::Connector;
use crate::error::TopologyError;
use crate::options::ConnectionOptions;

/// The kind of a declared queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueKind {
    /// A classic queue. Delivery counts are approximate: 1 on first
    /// delivery, 2 once the broker flags a redelivery, plus the times the
    /// message was rejected into the dead-letter exchange (`x-death`) and
    /// the deliveries carried across delayed redeliveries.
    #[default]
    Classic,
    /// A quorum queue (replicated, `x-queue-type = quorum`). The broker
    /// counts deliveries in `x-delivery-count`, so delivery counts are
    /// exact.
    Quorum,
}

/// How [`Topology`] declares a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueOptions {
    kind: QueueKind,
    expires: Option<Duration>,
}

impl QueueOptions {
    /// A classic queue.
    pub fn classic() -> Self {
        Self::default()
    }

    /// A quorum queue.
    pub fn quorum() -> Self {
        Self::default().kind(QueueKind::Quorum)
    }

    /// The queue kind; default [`QueueKind::Classic`].
    pub fn kind(mut self, kind: QueueKind) -> Self {
        self.kind = kind;
        self
    }

    /// Lets the broker delete the queues after they have gone unused (no
    /// consumer, no redeclaration) this long (`x-expires`), and makes the
    /// exchanges auto-delete with their last binding. Meant for tests and
    /// throwaway queues; default: never. The delay queue counts as unused
    /// even while messages wait in it, so keep this well above the longest
    /// redelivery delay.
    pub fn expires(mut self, after: Duration) -> Self {
        self.expires = Some(after);
        self
    }
}

impl From<QueueKind> for QueueOptions {
    fn from(kind: QueueKind) -> Self {
        Self::default().kind(kind)
    }
}

impl QueueKind {
    fn argument(self) -> &'static str {
        match self {
            Self::Classic => "classic",
            Self::Quorum => "quorum",
        }
    }
}

/// The exchange [`Topology`] declares for `queue`: named after it.
pub fn exchange_name(queue: &str) -> String {
    queue.to_owned()
}

/// The dead-letter exchange of `queue`: `<queue>.dlx`.
pub fn dead_letter_exchange(queue: &str) -> String {
    format!("{queue}.dlx")
}

/// The dead-letter queue of `queue`: `<queue>.dlq`.
pub fn dead_letter_queue(queue: &str) -> String {
    format!("{queue}.dlq")
}

/// The delay queue of `queue`: `<queue>.delay`. Messages wait there for
/// their per-message TTL, then the broker dead-letters them back to `queue`.
pub fn delay_queue(queue: &str) -> String {
    format!("{queue}.delay")
}

/// Declares and deletes the exchanges and queues a spec needs.
///
/// For a queue `q` it declares, all durable:
///
/// | name | what |
/// |---|---|
/// | `q` (exchange) | direct exchange the publisher sends to, bound to `q` with routing key `q` |
/// | `q` (queue) | classic or quorum, dead-lettering into `q.dlx` |
/// | `q.dlx` | fanout dead-letter exchange |
/// | `q.dlq` | dead-letter queue bound to `q.dlx`, of the same kind as `q` |
/// | `q.delay` | classic queue where delayed redeliveries wait out their TTL, dead-lettering back to `q` |
///
/// Declaring is idempotent as long as the arguments do not change.
#[derive(Clone)]
pub struct Topology {
    connector: Connector,
}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topology")
            .field("connection", self.connector.options())
            .finish()
    }
}

impl Topology {
    /// Topology management over its own connection, opened on first use.
    pub fn new(connection: ConnectionOptions) -> Self {
        Self::on(Connector::new(connection))
    }

    /// Topology management on `connector`'s connection.
    pub(crate) fn on(connector: Connector) -> Self {
        Self { connector }
    }

    /// Declares what the consumer of `spec` reads from.
    pub async fn declare_queue_spec<T, C>(
        &self,
        spec: &QueueSpec<T, C>,
        options: QueueOptions,
    ) -> Result<(), TopologyError> {
        self.declare_queue(spec.name(), options).await
    }

    /// Declares the destination queue of `spec`.
    pub async fn declare_outbox_spec<T, C>(
        &self,
        spec: &OutboxSpec<T, C>,
        options: QueueOptions,
    ) -> Result<(), TopologyError> {
        let destination = spec.route().require_destination()?;
        self.declare_queue(destination, options).await
    }

    /// Declares `queue` with its exchange, binding, dead-letter exchange and
    /// queue, and delay queue.
    #[tracing::instrument(skip_all, fields(messaging.system = "rabbitmq", messaging.destination.name = queue), err)]
    pub async fn declare_queue(
        &self,
        queue: &str,
        options: QueueOptions,
    ) -> Result<(), TopologyError> {
        validate_name("queue", queue)?;
        let ch = self.channel().await?;
        let dlx = dead_letter_exchange(queue);
        let dlq = dead_letter_queue(queue);
        let exchange = exchange_name(queue);
        let auto_delete = options.expires.is_some();
        declare_exchange(&ch, &dlx, ExchangeKind::Fanout, auto_delete).await?;
        declare(&ch, &dlq, queue_arguments(options, None)).await?;
        bind(&ch, &dlq, &dlx, "").await?;
        declare(&ch, queue, queue_arguments(options, Some(&dlx))).await?;
        declare_exchange(&ch, &exchange, ExchangeKind::Direct, auto_delete).await?;
        bind(&ch, queue, &exchange, queue).await?;
        declare(&ch, &delay_queue(queue), delay_arguments(queue, options)).await?;
        let _ = ch.close(200, "OK".into()).await;
        Ok(())
    }

    /// Deletes everything [`declare_queue`](Self::declare_queue) declared,
    /// messages included.
    #[tracing::instrument(skip_all, fields(messaging.system = "rabbitmq", messaging.destination.name = queue), err)]
    pub async fn delete_queue(&self, queue: &str) -> Result<(), TopologyError> {
        validate_name("queue", queue)?;
        let ch = self.channel().await?;
        for name in [
            queue.to_owned(),
            dead_letter_queue(queue),
            delay_queue(queue),
        ] {
            ch.queue_delete(name.as_str().into(), QueueDeleteOptions::default())
                .await
                .map_err(|source| broker("delete queue", &name, source))?;
        }
        for name in [exchange_name(queue), dead_letter_exchange(queue)] {
            ch.exchange_delete(name.as_str().into(), ExchangeDeleteOptions::default())
                .await
                .map_err(|source| broker("delete exchange", &name, source))?;
        }
        let _ = ch.close(200, "OK".into()).await;
        Ok(())
    }

    async fn channel(&self) -> Result<Channel, TopologyError> {
        self.connector
            .channel()
            .await
            .map_err(TopologyError::Connect)
    }
}

fn broker(action: &'static str, name: &str, source: lapin::Error) -> TopologyError {
    TopologyError::Broker {
        action,
        name: name.to_owned(),
        source,
    }
}

fn durable_queue() -> QueueDeclareOptions {
    QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    }
}

async fn declare(ch: &Channel, queue: &str, arguments: FieldTable) -> Result<(), TopologyError> {
    ch.queue_declare(queue.into(), durable_queue(), arguments)
        .await
        .map(drop)
        .map_err(|source| broker("declare queue", queue, source))
}

async fn declare_exchange(
    ch: &Channel,
    name: &str,
    kind: ExchangeKind,
    auto_delete: bool,
) -> Result<(), TopologyError> {
    let options = ExchangeDeclareOptions {
        durable: true,
        auto_delete,
        ..ExchangeDeclareOptions::default()
    };
    ch.exchange_declare(name.into(), kind, options, FieldTable::default())
        .await
        .map_err(|source| broker("declare exchange", name, source))
}

async fn bind(ch: &Channel, queue: &str, exchange: &str, key: &str) -> Result<(), TopologyError> {
    ch.queue_bind(
        queue.into(),
        exchange.into(),
        key.into(),
        QueueBindOptions::default(),
        FieldTable::default(),
    )
    .await
    .map_err(|source| broker("bind queue", queue, source))
}

fn put(table: &mut FieldTable, name: &str, value: &str) {
    table.insert(
        ShortString::from(name),
        AMQPValue::LongString(LongString::from(value)),
    );
}

fn queue_arguments(options: QueueOptions, dead_letter_exchange: Option<&str>) -> FieldTable {
    let mut args = FieldTable::default();
    put(&mut args, "x-queue-type", options.kind.argument());
    if let Some(expires) = options.expires {
        let millis = i64::try_from(expires.as_millis())
            .unwrap_or(i64::MAX)
            .max(1);
        args.insert("x-expires".into(), AMQPValue::LongLongInt(millis));
    }
    if let Some(dlx) = dead_letter_exchange {
        put(&mut args, "x-dead-letter-exchange", dlx);
    }
    args
}

/// A classic queue whose expired messages go back to `queue` through the
/// default exchange.
fn delay_arguments(queue: &str, options: QueueOptions) -> FieldTable {
    let mut args = queue_arguments(options.kind(QueueKind::Classic), Some(""));
    put(&mut args, "x-dead-letter-routing-key", queue);
    args
}
