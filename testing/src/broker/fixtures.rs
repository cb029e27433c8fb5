//! Envelopes and stream helpers the broker suite builds on.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use tidings_core::{Acker, Delivery, Envelope, Hlc, Source};

use crate::names::unique_name;

/// How long the suite waits for a delivery it expects.
pub const RECEIVE_TIMEOUT: Duration = Duration::from_secs(15);

/// An envelope for `queue` with payload `n` and every optional field set.
pub fn envelope(queue: &str, n: u32) -> Envelope {
    let mut env = Envelope::new(
        unique_name("route"),
        queue,
        "test.event",
        Bytes::from(format!("{{\"n\":{n}}}")),
        "application/json",
    );
    env.headers.insert(
        "traceparent".into(),
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
    );
    env.headers
        .insert("x-note".into(), "ünicode and \"quotes\"".into());
    env.ordering_key = Some(format!("key-{n}"));
    env.correlation_id = Some("corr".into());
    env.causation_id = Some("cause".into());
    env.tenant_id = Some("tenant".into());
    env.hlc = Some(Hlc::from_u64((1_700_000_000_000 << 16) + u64::from(n)));
    // 2100-01-01, far enough that no consumer reads it as expired.
    let expires = Duration::from_secs(4_102_444_800) + Duration::from_micros(u64::from(n));
    env.expires_at = Some(std::time::UNIX_EPOCH + expires);
    env.attempts = 1;
    env
}

/// The next delivery, or `None` after `timeout`. Stream errors fail the test.
pub async fn next_within<S>(
    stream: &mut S,
    timeout: Duration,
) -> Option<Delivery<<S::Item as Item>::Acker>>
where
    S: futures::Stream + Unpin,
    S::Item: Item,
{
    match tokio::time::timeout(timeout, stream.next()).await {
        Err(_) => None,
        Ok(None) => panic!("delivery stream ended"),
        Ok(Some(item)) => Some(item.delivery()),
    }
}

/// The next delivery; fails the test after [`RECEIVE_TIMEOUT`].
pub async fn next<S>(stream: &mut S) -> Delivery<<S::Item as Item>::Acker>
where
    S: futures::Stream + Unpin,
    S::Item: Item,
{
    next_within(stream, RECEIVE_TIMEOUT)
        .await
        .expect("no delivery arrived in time")
}

/// Subscribes or fails the test.
pub async fn subscribe<S: Source>(source: &S, queue: &str) -> S::Stream {
    source
        .subscribe(queue)
        .await
        .unwrap_or_else(|e| panic!("subscribe to {queue}: {e}"))
}

/// A stream item: a delivery or an error that fails the test.
pub trait Item {
    /// The delivery's acker.
    type Acker: Acker;
    /// The delivery, panicking on a stream error.
    fn delivery(self) -> Delivery<Self::Acker>;
}

impl<A: Acker, E: std::fmt::Display> Item for Result<Delivery<A>, E> {
    type Acker = A;

    fn delivery(self) -> Delivery<A> {
        self.unwrap_or_else(|e| panic!("delivery stream failed: {e}"))
    }
}
