use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use super::{QueueSpec, RetryPolicy, SpecError, validate_name};
use crate::codec::{Codec, JsonCodec};

/// How the relay orders the events of one outbox spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum OrderingMode {
    /// No ordering: rows are claimed oldest first but published
    /// concurrently, retried independently. The fastest mode.
    #[default]
    Unordered,
    /// At most one row per ordering key is in flight, oldest first, across
    /// any number of relays. A retrying row holds back only its own key.
    /// Rows without an ordering key are not held back.
    PerKey,
}

/// The untyped part of an [`OutboxSpec`]: everything the relay and the
/// stores need, without the payload type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The spec's name, stored with every row as its route.
    pub name: Cow<'static, str>,
    /// The queue (or exchange) events are relayed to.
    pub destination: Option<Cow<'static, str>>,
    /// Ordering mode.
    pub ordering: OrderingMode,
    /// Retry policy of the relay.
    pub retry: RetryPolicy,
    /// Whether events carry a hybrid logical clock stamp and are claimed in
    /// its order rather than in staging order.
    pub hlc_ordering: bool,
}

impl Route {
    /// Checks names and the retry policy.
    ///
    /// # Errors
    ///
    /// [`SpecError::NoDestination`] when the route has no destination;
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when its name or destination is not a legal
    /// name; [`SpecError::InvalidRetry`] when its retry policy cannot work.
    pub fn validate(&self) -> Result<(), SpecError> {
        validate_name("route", &self.name)?;
        let destination = self.require_destination()?;
        validate_name("destination", destination)?;
        if let Some(reason) = self.retry.problem() {
            return Err(SpecError::InvalidRetry {
                route: self.name.to_string(),
                reason,
            });
        }
        Ok(())
    }

    /// The destination, or the error saying there is none.
    ///
    /// # Errors
    ///
    /// [`SpecError::NoDestination`] when the route has none.
    pub fn require_destination(&self) -> Result<&str, SpecError> {
        self.destination
            .as_deref()
            .ok_or_else(|| SpecError::NoDestination {
                route: self.name.to_string(),
            })
    }
}

/// Names an outbox stream: its route name, payload codec, destination queue,
/// ordering mode and retry policy.
///
/// Built with `const fn`s so it can be a `static` shared by producer and
/// relay; where a name is known only at run time (an environment's
/// prefix, say), [`json_named`](Self::json_named) and
/// [`destination_named`](Self::destination_named) take an owned one. Typed only
/// at the edge: staging encodes `T` with the codec; the relay sees bytes.
///
/// ```
/// use tidings_core::OutboxSpec;
///
/// static ORDER_EVENTS: OutboxSpec<u64> = OutboxSpec::json("order-events").destination("orders");
///
/// let env = "staging";
/// let events: OutboxSpec<u64> =
///     OutboxSpec::json_named(format!("{env}-order-events")).destination_named(format!("{env}-orders"));
/// assert_eq!(events.name(), "staging-order-events");
/// # assert_eq!(ORDER_EVENTS.name(), "order-events");
/// ```
pub struct OutboxSpec<T, C = JsonCodec> {
    route: Route,
    codec: C,
    payload: PhantomData<fn(T) -> T>,
}

impl<T> OutboxSpec<T, JsonCodec> {
    /// A spec whose payloads are JSON.
    pub const fn json(name: &'static str) -> Self {
        Self::with_codec(name, JsonCodec)
    }

    /// A spec whose payloads are JSON, named at run time.
    pub fn json_named(name: impl Into<Cow<'static, str>>) -> Self {
        let mut spec = Self::json("");
        spec.route.name = name.into();
        spec
    }
}

impl<T, C> OutboxSpec<T, C> {
    /// A spec with the given codec.
    pub const fn with_codec(name: &'static str, codec: C) -> Self {
        Self {
            route: Route {
                name: Cow::Borrowed(name),
                destination: None,
                ordering: OrderingMode::Unordered,
                retry: RetryPolicy::new(),
                hlc_ordering: false,
            },
            codec,
            payload: PhantomData,
        }
    }

    /// Relays events to `destination`: a queue on RabbitMQ and SQS, a topic
    /// on Kafka. It must equal the name of the consumer's [`QueueSpec`].
    pub const fn destination(mut self, destination: &'static str) -> Self {
        // The name it replaces cannot be dropped in a `const fn`; forgetting
        // it leaks nothing, as a const-built spec holds only borrowed names.
        let replaced = self.route.destination.replace(Cow::Borrowed(destination));
        std::mem::forget(replaced);
        self
    }

    /// Relays events to `destination`, named at run time.
    pub fn destination_named(mut self, destination: impl Into<Cow<'static, str>>) -> Self {
        self.route.destination = Some(destination.into());
        self
    }

    /// Orders events per ordering key (see [`OrderingMode::PerKey`]).
    pub const fn per_key(mut self) -> Self {
        self.route.ordering = OrderingMode::PerKey;
        self
    }

    /// Sets the retry policy.
    pub const fn retry(mut self, retry: RetryPolicy) -> Self {
        self.route.retry = retry;
        self
    }

    /// Stamps events with a hybrid logical clock and claims them in its
    /// order, so a reaction sorts after its cause across replicas.
    pub const fn hlc_ordering(mut self) -> Self {
        self.route.hlc_ordering = true;
        self
    }

    /// The spec's name (the route stored with every row).
    pub fn name(&self) -> &str {
        &self.route.name
    }

    /// The untyped part the relay and stores use.
    pub const fn route(&self) -> &Route {
        &self.route
    }

    /// The payload codec.
    pub const fn codec(&self) -> &C {
        &self.codec
    }

    /// Checks the spec: legal names, a destination, a workable retry policy.
    ///
    /// # Errors
    ///
    /// [`SpecError::NoDestination`] when the spec has no destination;
    /// [`SpecError::EmptyName`], [`SpecError::NameTooLong`] or
    /// [`SpecError::IllegalName`] when its name or destination is not a legal
    /// name; [`SpecError::InvalidRetry`] when its retry policy cannot work.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.route.validate()
    }

    /// Checks that this spec relays to `queue`.
    ///
    /// # Errors
    ///
    /// The errors of [`validate`](Self::validate) for either spec, and
    /// [`SpecError::DestinationMismatch`] when this spec relays somewhere other
    /// than `queue`.
    pub fn check_pair<Q>(&self, queue: &QueueSpec<T, Q>) -> Result<(), SpecError> {
        self.validate()?;
        queue.validate()?;
        let destination = self.route.require_destination()?;
        if destination != queue.name() {
            return Err(SpecError::DestinationMismatch {
                route: self.route.name.to_string(),
                destination: destination.to_owned(),
                queue: queue.name().to_owned(),
            });
        }
        Ok(())
    }
}

impl<T, C: Codec<T>> OutboxSpec<T, C> {
    /// The content type of encoded payloads.
    pub fn content_type(&self) -> &'static str {
        self.codec.content_type()
    }
}

impl<T, C: fmt::Debug> fmt::Debug for OutboxSpec<T, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutboxSpec")
            .field("route", &self.route)
            .field("codec", &self.codec)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backoff, RawCodec};
    use std::time::Duration;

    static SPEC: OutboxSpec<u32> = OutboxSpec::json("order-events")
        .destination("orders")
        .per_key();

    #[test]
    fn const_spec_carries_its_settings() {
        assert_eq!(SPEC.name(), "order-events");
        assert_eq!(SPEC.route().destination.as_deref(), Some("orders"));
        assert_eq!(SPEC.route().ordering, OrderingMode::PerKey);
        assert_eq!(SPEC.content_type(), "application/json");
        SPEC.validate().unwrap();
    }

    #[test]
    fn missing_destination_is_reported() {
        let spec: OutboxSpec<u32> = OutboxSpec::json("order-events");
        assert_eq!(
            spec.validate(),
            Err(SpecError::NoDestination {
                route: "order-events".into()
            })
        );
    }

    #[test]
    fn illegal_names_are_reported() {
        let spec: OutboxSpec<u32> = OutboxSpec::json("order events").destination("orders");
        assert!(matches!(
            spec.validate(),
            Err(SpecError::IllegalName { kind: "route", .. })
        ));
        let spec: OutboxSpec<u32> = OutboxSpec::json("orders").destination("q;drop");
        assert!(matches!(
            spec.validate(),
            Err(SpecError::IllegalName {
                kind: "destination",
                ..
            })
        ));
        let spec: OutboxSpec<u32> = OutboxSpec::json("").destination("orders");
        assert_eq!(spec.validate(), Err(SpecError::EmptyName { kind: "route" }));
    }

    #[test]
    fn bad_retry_policies_are_reported() {
        for retry in [
            RetryPolicy::new().max_attempts(0),
            RetryPolicy::new().backoff(Backoff::new(Duration::ZERO, Duration::from_secs(1))),
            RetryPolicy::new().backoff(Backoff::new(
                Duration::from_secs(1),
                Duration::from_millis(1),
            )),
        ] {
            let spec: OutboxSpec<u32> = OutboxSpec::json("e").destination("q").retry(retry);
            assert!(matches!(
                spec.validate(),
                Err(SpecError::InvalidRetry { .. })
            ));
        }
    }

    #[test]
    fn pairing_checks_the_destination() {
        let queue: QueueSpec<u32> = QueueSpec::json("orders");
        SPEC.check_pair(&queue).unwrap();
        let other: QueueSpec<u32> = QueueSpec::json("payments");
        assert_eq!(
            SPEC.check_pair(&other),
            Err(SpecError::DestinationMismatch {
                route: "order-events".into(),
                destination: "orders".into(),
                queue: "payments".into(),
            })
        );
    }

    #[test]
    fn custom_codec_specs_are_const() {
        static RAW: OutboxSpec<Vec<u8>, RawCodec> =
            OutboxSpec::with_codec("blobs", RawCodec).destination("blobs");
        assert_eq!(RAW.content_type(), "application/octet-stream");
    }
}
