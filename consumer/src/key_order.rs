//! What a consumer promises about the order of deliveries sharing an
//! ordering key.

/// How deliveries sharing an ordering key are handled relative to each
/// other ([`ConsumerOptions::key_order`](crate::ConsumerOptions::key_order)).
///
/// Each mode orders deliveries as this consumer receives them, which is
/// the order of the queue: the outbox publishes a per-key route's events
/// in staging order. The promises hold within one consumer of a queue;
/// consumers competing on one queue each receive part of a key's
/// deliveries, and no mode orders them across consumers (give each queue
/// one active consumer for that). Deliveries without an ordering key are
/// never held back by others. In every mode the inbox commits each event's
/// effect once, a permanent handler error dead-letters the delivery at
/// once, and a delivery past
/// [`max_deliveries`](crate::ConsumerOptions::max_deliveries) is
/// dead-lettered without running the handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyOrder {
    /// No order: deliveries of one key may run at once and commit in any
    /// order. For handlers whose effects commute.
    Unordered,
    /// One at a time per key, in arrival order (the default). A delivery
    /// that fails transiently is retried in process
    /// ([`attempts`](crate::ConsumerOptions::attempts), with
    /// [`retry_backoff`](crate::ConsumerOptions::retry_backoff)); if every
    /// attempt fails it is nacked and its key released, so the next
    /// delivery of the key runs while the nacked one waits for its
    /// redelivery. Effects of a key commit in arrival order except around
    /// such a nack: an event that failed past its in-process attempts may
    /// commit after later events of its key. Nothing waits on a failing
    /// delivery longer than its in-process attempts.
    #[default]
    Serial,
    /// One at a time per key, in arrival order, and a failing delivery
    /// holds its key: it is retried in process, with
    /// [`retry_backoff`](crate::ConsumerOptions::retry_backoff) between
    /// tries, until it succeeds or
    /// [`strict_attempts`](crate::ConsumerOptions::strict_attempts) in all
    /// have failed; then it is dead-lettered, never nacked past, and only
    /// then does the next delivery of its key run. Effects of a key commit
    /// in arrival order; a dead-lettered event is skipped, and replaying it
    /// later puts it after its key's newer events. A delivery without a
    /// key holds nothing and is nacked after its `attempts`, as in
    /// [`Serial`](Self::Serial).
    ///
    /// The cost: a key waits while its delivery is retried, at most
    /// `strict_attempts` handler runs (each within
    /// [`handler_timeout`](crate::ConsumerOptions::handler_timeout)) and
    /// the backoff between them; deliveries queued behind the key keep
    /// their share of the source's prefetch meanwhile, and with
    /// [`max_batch`](crate::ConsumerOptions::max_batch) the other
    /// deliveries of a batch whose transaction was rolled back wait too,
    /// as they run one at a time after it. On shutdown a held delivery
    /// stops retrying and is left unsettled, with those queued behind its
    /// key, for the broker to redeliver; the inbox skips any whose effect
    /// committed.
    Strict,
}
