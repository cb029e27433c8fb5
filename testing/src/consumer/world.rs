//! What a backend gives the consumer suite: a queue of its own, a source
//! on it, an inbox, and an effect the handler writes in the inbox's
//! transaction.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::time::Duration;

use bytes::Bytes;
use tidings_consumer::{
    Consumer, ConsumerOptions, ConsumerReport, Handler, HandlerError, StoredConsumer, StoredInbox,
    TxHandle, handler_fn,
};
use tidings_core::give_up::GiveUp;
use tidings_core::lifecycle::Step;
use tidings_core::{
    Backoff, Envelope, InboxAttempts, InboxStore, JsonCodec, Message, QueueSpec, Source,
    StageEvents,
};
use tidings_inbox::Inbox;
use tokio_util::sync::CancellationToken;

/// The suite's payload.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Order {
    /// The order's id, which its effect is counted under.
    pub id: u32,
}

/// How many orders have an effect, and the most effects one order has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effects {
    /// Orders with at least one effect.
    pub orders: u64,
    /// The most effects any one order has (1 when every effect happened
    /// once).
    pub most: u64,
}

/// The transaction a world's handlers write through.
pub type WorldTx<W> = <<W as ConsumerWorld>::Inbox as InboxStore>::Tx;

/// One case's queue, source, inbox and effects, made fresh for it.
pub trait ConsumerWorld: Send + Sync + 'static {
    /// The source reading the world's queue.
    type Source: Source;
    /// The inbox store.
    type Inbox: InboxAttempts;
    /// The store a world whose consumers keep what they receive in a
    /// [`StoredInbox`] keeps it in; any store where they do not.
    type Kept: StageEvents;

    /// A source on the queue (each call may open its own connection).
    fn source(&self) -> Self::Source;

    /// The queue, by the name the world gave it.
    fn queue(&self) -> QueueSpec<Order>;

    /// The inbox of the consumer under test.
    fn inbox(&self) -> Inbox<Self::Inbox>;

    /// Sends `envelope` to the queue as a producer would.
    fn publish(&self, envelope: &Envelope) -> impl Future<Output = ()> + Send;

    /// Adds one to order `id`'s effects within `tx`.
    ///
    /// # Errors
    ///
    /// A [`HandlerError`] when the write fails; the consumer under test then
    /// treats the delivery as a failed attempt.
    fn apply(
        &self,
        tx: &TxHandle<WorldTx<Self>>,
        id: u32,
    ) -> impl Future<Output = Result<(), HandlerError>> + Send;

    /// The effects committed so far.
    fn effects(&self) -> impl Future<Output = Effects> + Send;

    /// Where the world's consumers keep what they receive: `None`, the
    /// default, leaves it on the broker; a stored inbox runs every case
    /// through it.
    fn kept(&self) -> Option<StoredInbox<Self::Kept>> {
        None
    }

    /// Removes what the world created; called after each case that passes.
    fn teardown(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// A world whose broker connection the test can break.
pub trait ConnectionFaults: ConsumerWorld {
    /// Closes the connections of the world's sources from the broker's
    /// side, as a broker restart or a network cut would.
    fn lose_connection(&self) -> impl Future<Output = ()> + Send;
}

/// Short backoffs so cases run in seconds.
pub const QUICK: Backoff = Backoff::new(Duration::from_millis(10), Duration::from_millis(200));

/// A stored inbox in `store` for the suite: quick retries of failed
/// messages, a short polling floor, and as many claims before parking as
/// the suite's deliveries (its cases count handler runs).
pub fn quick_stored<St: StageEvents>(store: St) -> StoredInbox<St> {
    let relay =
        tidings_core::relay::RelayOptions::default().poll_interval(Duration::from_millis(50));
    StoredInbox::new(store)
        .retry_backoff(QUICK)
        .relay_options(relay)
        .max_claims(ConsumerOptions::DEFAULT_MAX_DELIVERIES)
}

/// Consumer options for the suite: quick retries and restarts.
pub fn options() -> ConsumerOptions {
    ConsumerOptions::default()
        .retry_backoff(QUICK)
        .restart_backoff(QUICK)
        .shutdown_timeout(Duration::from_secs(10))
}

/// Order `id` as an envelope for the world's queue, keyed by `key`.
pub fn order(world: &impl ConsumerWorld, id: u32, key: Option<&str>) -> Envelope {
    order_to(world.queue().name(), id, key)
}

/// Order `id` as an `order.placed` envelope for `queue`, keyed by `key`.
pub fn order_to(queue: &str, id: u32, key: Option<&str>) -> Envelope {
    let payload = Bytes::from(serde_json::to_vec(&Order { id }).expect("an order encodes"));
    let mut envelope = Envelope::new(
        "order-events",
        queue,
        "order.placed",
        payload,
        "application/json",
    );
    envelope.ordering_key = key.map(str::to_owned);
    envelope
}

/// A handler that applies each order's effect, and nothing else.
pub fn counting<W: ConsumerWorld>(world: &Arc<W>) -> impl Handler<Order, WorldTx<W>> {
    answering(world, &Arc::default(), |_| Ok(()))
}

/// A handler that applies each order's effect, then answers what
/// `answer(n)` says, `n` counting its calls before this one in `calls`.
pub fn answering<W, F>(
    world: &Arc<W>,
    calls: &Arc<AtomicU32>,
    answer: F,
) -> impl Handler<Order, WorldTx<W>> + use<W, F>
where
    W: ConsumerWorld,
    F: Fn(u32) -> Result<(), HandlerError> + Clone + Send + Sync + 'static,
{
    let (world, calls) = (world.clone(), calls.clone());
    handler_fn(move |msg: Message<Order>, tx: TxHandle<WorldTx<W>>| {
        let (world, calls, answer) = (world.clone(), calls.clone(), answer.clone());
        async move {
            world.apply(&tx, msg.payload.id).await?;
            answer(calls.fetch_add(1, SeqCst))
        }
    })
}

/// A handler that adds one to `calls` on each call, then runs
/// `handle(n, msg, tx)`, `n` counting the calls before this one.
pub fn counted<Tx, F, Fut>(
    calls: &Arc<AtomicU32>,
    handle: F,
) -> impl Handler<Order, Tx> + use<Tx, F, Fut>
where
    Tx: Send + 'static,
    F: Fn(u32, Message<Order>, TxHandle<Tx>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    let calls = calls.clone();
    handler_fn(move |msg: Message<Order>, tx: TxHandle<Tx>| {
        handle(calls.fetch_add(1, SeqCst), msg, tx)
    })
}

/// The world's consumer with `handler`, its inbox and `options`, keeping
/// what it receives where the world says.
pub fn consumer<W, H>(world: &W, handler: H, options: ConsumerOptions) -> WorldConsumer<W, H>
where
    W: ConsumerWorld,
{
    keeping(world, direct(world, handler, options))
}

/// The world's consumer as [`consumer`] builds it, running `hook` before
/// it parks a message.
pub fn giving_up<W, H, G>(
    world: &W,
    handler: H,
    options: ConsumerOptions,
    hook: G,
) -> WorldConsumer<W, H>
where
    W: ConsumerWorld,
    G: GiveUp<WorldTx<W>>,
{
    keeping(world, direct(world, handler, options).give_up(hook))
}

/// The world's consumer handling each delivery as the broker hands it
/// over.
fn direct<W, H>(world: &W, handler: H, options: ConsumerOptions) -> DirectConsumer<W, H>
where
    W: ConsumerWorld,
{
    Consumer::new(world.source(), world.queue(), handler)
        .expect("a legal queue name")
        .inbox(world.inbox())
        .options(options)
}

/// `consumer`, keeping what it receives where the world says.
fn keeping<W, H>(world: &W, consumer: DirectConsumer<W, H>) -> WorldConsumer<W, H>
where
    W: ConsumerWorld,
{
    match world.kept() {
        None => WorldConsumer::Direct(Box::new(consumer)),
        Some(kept) => {
            let stored = consumer.stored(kept).expect("a legal consumer name");
            WorldConsumer::Stored(Box::new(stored))
        }
    }
}

/// A world's consumer handling each delivery as the broker hands it over.
pub type DirectConsumer<W, H> =
    Consumer<<W as ConsumerWorld>::Source, Order, JsonCodec, H, <W as ConsumerWorld>::Inbox>;

/// A world's consumer storing each delivery and handling it from the store.
pub type KeepingConsumer<W, H> = StoredConsumer<
    <W as ConsumerWorld>::Source,
    Order,
    JsonCodec,
    H,
    <W as ConsumerWorld>::Inbox,
    <W as ConsumerWorld>::Kept,
>;

/// A world's consumer: taking from the broker, or through a stored inbox.
pub enum WorldConsumer<W: ConsumerWorld, H> {
    /// Handles each delivery as the broker hands it over.
    Direct(Box<DirectConsumer<W, H>>),
    /// Stores each delivery and handles it from the store.
    Stored(Box<KeepingConsumer<W, H>>),
}

/// A consumer the suite runs and reads the report of.
pub trait Runs: Send + Sync + 'static {
    /// Consumes until `cancel` fires.
    fn run(&self, cancel: CancellationToken) -> impl Future<Output = ()> + Send;

    /// What it has done so far.
    fn report(&self) -> ConsumerReport;
}

impl<S, T, C, H, I> Runs for Consumer<S, T, C, H, I>
where
    Self: Step,
{
    async fn run(&self, cancel: CancellationToken) {
        Step::run(self, cancel).await.expect("the consumer starts");
    }

    fn report(&self) -> ConsumerReport {
        Consumer::report(self)
    }
}

impl<W, H> Runs for WorldConsumer<W, H>
where
    W: ConsumerWorld,
    H: Handler<Order, WorldTx<W>>,
{
    async fn run(&self, cancel: CancellationToken) {
        match self {
            Self::Direct(consumer) => consumer.run(cancel).await,
            Self::Stored(consumer) => consumer
                .run(cancel)
                .await
                .expect("the stored consumer runs"),
        }
    }

    fn report(&self) -> ConsumerReport {
        match self {
            Self::Direct(consumer) => consumer.report(),
            Self::Stored(consumer) => consumer.report(),
        }
    }
}

/// Runs `consumer` until `done` holds (asked every 20 ms) or 60 s pass,
/// then shuts it down and returns its report.
pub async fn run_until<W, H, F, Fut>(consumer: WorldConsumer<W, H>, done: F) -> ConsumerReport
where
    W: ConsumerWorld,
    H: Handler<Order, WorldTx<W>>,
    F: Fn(ConsumerReport) -> Fut,
    Fut: Future<Output = bool>,
{
    run_for(consumer, Duration::from_secs(60), done).await
}

/// Runs `consumer` until `done` holds of its report (asked every 20 ms)
/// or `limit` passes, then shuts it down and returns its report.
pub async fn run_for<R, F, Fut>(consumer: R, limit: Duration, done: F) -> ConsumerReport
where
    R: Runs,
    F: Fn(ConsumerReport) -> Fut,
    Fut: Future<Output = bool>,
{
    let cancel = CancellationToken::new();
    let consumer = Arc::new(consumer);
    let task = tokio::spawn({
        let (consumer, cancel) = (consumer.clone(), cancel.clone());
        async move { consumer.run(cancel).await }
    });
    let deadline = tokio::time::Instant::now() + limit;
    while !done(consumer.report()).await && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cancel.cancel();
    task.await.expect("the consumer task");
    consumer.report()
}
