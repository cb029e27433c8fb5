//! Declaring what a queue needs: its exchange and binding, a dead-letter
//! exchange and queue, and the delay queue delayed redeliveries wait in.

use lapin::options::{
    ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::FieldTable;
use lapin::{Channel, ExchangeKind};
use tidings_core::spec::validate_name;
use tidings_core::{OutboxSpec, QueueSpec};

use crate::connection::Connector;
use crate::error::{Cause, TopologyError, cause};
use crate::inequivalent;
use crate::names::{dead_letter_exchange, dead_letter_queue, delay_queue, exchange_name};
use crate::options::ConnectionOptions;
use crate::queue::QueueOptions;
use crate::queue::arguments::{
    Role, dead_letter_arguments, delay_arguments, queue_arguments, setting_of,
};
use crate::verify::verify_queue;

/// Who owns the queues and exchanges of a [`Topology`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TopologyMode {
    /// Tidings declares what it needs, with the arguments of its
    /// [`QueueOptions`], and fails with
    /// [`TopologyError::Inequivalent`] when a queue exists with others.
    #[default]
    Declare,
    /// An operator declares the topology (with whatever arguments and
    /// policies they choose); tidings declares nothing and only checks,
    /// with passive declares, that the queues and exchanges it needs
    /// exist, failing with [`TopologyError::Missing`] naming each one that
    /// does not. A passive declare cannot read a queue's arguments or
    /// bindings, so those are the operator's to get right.
    Verify,
}

/// Declares and deletes the exchanges and queues a spec needs.
///
/// For a queue `q` it declares, all durable:
///
/// | name | what |
/// |---|---|
/// | `q` (exchange) | direct exchange the publisher sends to, bound to `q` with routing key `q` |
/// | `q` (queue) | classic, quorum or stream, with the arguments of its [`QueueOptions`], dead-lettering into `q.dlx` (not a stream) |
/// | `q.dlx` | fanout dead-letter exchange |
/// | `q.dlq` | dead-letter queue bound to `q.dlx`, with its [`DeadLetterOptions`](crate::DeadLetterOptions) |
/// | `q.delay` | classic queue where delayed redeliveries wait out their TTL, dead-lettering back to `q` |
///
/// Declaring is idempotent as long as the arguments do not change. In
/// [`TopologyMode::Verify`] it declares nothing and checks that these
/// exist.
#[derive(Clone)]
pub struct Topology {
    connector: Connector,
    mode: TopologyMode,
}

impl std::fmt::Debug for Topology {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topology")
            .field("connection", self.connector.options())
            .field("mode", &self.mode)
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
        Self {
            connector,
            mode: TopologyMode::default(),
        }
    }

    /// Who owns the topology; default [`TopologyMode::Declare`].
    ///
    /// ```no_run
    /// use tidings_rabbitmq::{ConnectionOptions, QueueOptions, Topology, TopologyMode};
    ///
    /// # async fn run() -> Result<(), tidings_rabbitmq::TopologyError> {
    /// let topology = Topology::new(ConnectionOptions::new("amqp://127.0.0.1:5672/%2f"))
    ///     .mode(TopologyMode::Verify);
    /// // Declares nothing: fails if `orders`, `orders.dlq`, `orders.delay`
    /// // or the exchanges `orders` and `orders.dlx` do not exist.
    /// topology.declare_queue("orders", QueueOptions::default()).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn mode(mut self, mode: TopologyMode) -> Self {
        self.mode = mode;
        self
    }

    /// The [`mode`](Self::mode) setting.
    pub fn get_mode(&self) -> TopologyMode {
        self.mode
    }

    /// Declares what the consumer of `spec` reads from.
    ///
    /// # Errors
    ///
    /// The errors of [`declare_queue`](Self::declare_queue) for the spec's name.
    pub async fn declare_queue_spec<T, C>(
        &self,
        spec: &QueueSpec<T, C>,
        options: QueueOptions,
    ) -> Result<(), TopologyError> {
        self.declare_queue(spec.name(), options).await
    }

    /// Declares the destination queue of `spec`.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Name`] when the spec has no destination; otherwise the
    /// errors of [`declare_queue`](Self::declare_queue) for the destination.
    pub async fn declare_outbox_spec<T, C>(
        &self,
        spec: &OutboxSpec<T, C>,
        options: QueueOptions,
    ) -> Result<(), TopologyError> {
        let destination = spec.route().require_destination()?;
        self.declare_queue(destination, options).await
    }

    /// Declares `queue` with its exchange, binding, dead-letter exchange and
    /// queue, and delay queue; in [`TopologyMode::Verify`], checks that
    /// they exist instead.
    ///
    /// # Errors
    ///
    /// - [`TopologyError::Options`] when `options` do not go together
    ///   ([`QueueOptions::check`]), before anything is sent;
    /// - [`TopologyError::Inequivalent`] when a queue exists with other
    ///   arguments, naming the argument, both values and the setting;
    /// - [`TopologyError::Missing`] in [`TopologyMode::Verify`];
    /// - [`TopologyError::Connect`] when the broker cannot be reached.
    #[tracing::instrument(skip_all, fields(messaging.system = "rabbitmq", messaging.destination.name = queue), err)]
    pub async fn declare_queue(
        &self,
        queue: &str,
        options: QueueOptions,
    ) -> Result<(), TopologyError> {
        validate_name("queue", queue)?;
        options.check()?;
        if self.mode == TopologyMode::Verify {
            return verify_queue(&self.connector, queue).await;
        }
        let ch = self.channel().await?;
        let dlx = dead_letter_exchange(queue);
        let dlq = dead_letter_queue(queue);
        let exchange = exchange_name(queue);
        let auto_delete = options.get_expires().is_some();
        declare_exchange(&ch, &dlx, ExchangeKind::Fanout, auto_delete).await?;
        declare(&ch, &dlq, Role::DeadLetter, dead_letter_arguments(&options)).await?;
        bind(&ch, &dlq, &dlx, "").await?;
        declare(&ch, queue, Role::Queue, queue_arguments(&options, &dlx)).await?;
        declare_exchange(&ch, &exchange, ExchangeKind::Direct, auto_delete).await?;
        bind(&ch, queue, &exchange, queue).await?;
        let delay = delay_queue(queue);
        declare(&ch, &delay, Role::Delay, delay_arguments(queue, &options)).await?;
        let _ = ch.close(200, "OK".into()).await;
        Ok(())
    }

    /// Checks, with passive declares, that `queue` and everything
    /// [`declare_queue`](Self::declare_queue) would declare for it exist,
    /// whatever the [`mode`](Self::mode).
    ///
    /// # Errors
    ///
    /// [`TopologyError::Missing`] naming each queue and exchange that does
    /// not exist; [`TopologyError::Connect`] when the broker cannot be
    /// reached.
    #[tracing::instrument(skip_all, fields(messaging.system = "rabbitmq", messaging.destination.name = queue), err)]
    pub async fn verify_queue(&self, queue: &str) -> Result<(), TopologyError> {
        validate_name("queue", queue)?;
        verify_queue(&self.connector, queue).await
    }

    /// Deletes everything [`declare_queue`](Self::declare_queue) declared,
    /// messages included.
    ///
    /// # Errors
    ///
    /// [`TopologyError::Name`] when `queue` is not a legal name;
    /// [`TopologyError::Connect`] when the broker cannot be reached;
    /// [`TopologyError::Broker`] when the broker refuses a delete, naming the
    /// queue or exchange; what was deleted before it stays deleted.
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

/// Declares `queue`; a refusal over its arguments names the argument,
/// both values and the setting to change. The refusal closes the channel.
async fn declare(
    ch: &Channel,
    queue: &str,
    role: Role,
    arguments: FieldTable,
) -> Result<(), TopologyError> {
    let source = match ch
        .queue_declare(queue.into(), durable_queue(), arguments)
        .await
    {
        Ok(_) => return Ok(()),
        Err(source) => source,
    };
    let read = match cause(&source) {
        Cause::Refused { text, .. } => inequivalent::read(&text),
        _ => None,
    };
    Err(match read {
        Some(found) => TopologyError::Inequivalent {
            queue: queue.to_owned(),
            setting: setting_of(role, &found.argument),
            argument: found.argument,
            asked: found.asked,
            current: found.current,
        },
        None => broker("declare queue", queue, source),
    })
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
