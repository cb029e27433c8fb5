//! A relay ready to drain: its route fresh, its publisher's connection
//! open.

use tidings_core::relay::{Relay, RelayOptions};
use tidings_core::{OutboxSpec, Publisher, PublisherExt};
use tidings_postgres::PgOutboxStore;

use crate::env::spec;
use crate::payload::{Payload, envelopes};

/// A fresh route into `destination` and its relay on `store` through
/// `publisher`, with `options`. The publisher sends one envelope first, so
/// it opens its connection and finds the destination before any clock
/// starts.
pub(crate) async fn warm_relay<P: Publisher>(
    store: &PgOutboxStore,
    publisher: P,
    destination: &'static str,
    options: RelayOptions,
) -> anyhow::Result<(&'static OutboxSpec<Payload>, Relay<PgOutboxStore, P>)> {
    publisher.publish(&envelopes(destination, 1)?[0]).await?;
    let spec = spec(destination);
    let relay = Relay::new(store.clone(), publisher, spec)?.options(options);
    Ok((spec, relay))
}
