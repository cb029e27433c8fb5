//! drain-kafka: a backlog relayed to Kafka by the default relay (claims of
//! 500, published in windows of 100) through `KafkaPublisher`, against raw
//! librdkafka producing the same records (same headers, idempotent,
//! `acks=all`, the same librdkafka settings) in windows of the same size;
//! also `KafkaPublisher` alone. The sides alternate over six rounds, in the
//! orders of a balanced Latin square of three and its rows reversed, each
//! into a topic of its own.
//!
//! Then consume: the relayed records consumed by the consumer runner with
//! the PostgreSQL inbox, one transaction per message and in batches,
//! against the same two-row transactions in plain SQL.
//!
//! The broker on these machines is a stand-in (Tansu): only the ratios mean
//! something, never the absolute rates.

use std::time::{Duration, Instant};

use futures::future::try_join_all;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use tidings_core::cloudevents::to_attributes;
use tidings_core::relay::RelayOptions;
use tidings_core::{Envelope, PublisherExt};
use tidings_kafka::{ClientOptions, KafkaPublisher, PublisherOptions, TopicOptions, Topology};
use tidings_postgres::{PgOutboxStore, Retention};
use tidings_testing::names::unique_name;
use tidings_testing::services::{SETUP_COMMAND, kafka_brokers};

use super::{in_windows, publish_through};
use crate::consuming::{consume_from, create_invoices};
use crate::env::Env;
use crate::payload::envelopes;
use crate::report::{Figure, Goal, Report};
use crate::rounds::DrainRounds;
use crate::sizes::Sizes;
use crate::warm_relay::warm_relay;

const NAME: &str = "drain-kafka";
/// Partitions of every topic the scenario makes.
const PARTITIONS: i32 = 4;

#[derive(Debug, Clone, Copy)]
enum Side {
    Raw,
    Transport,
    Relay,
}

pub(super) async fn run(env: &Env, sizes: &Sizes, report: Report<'_>) -> anyhow::Result<()> {
    let client = ClientOptions::new(kafka_brokers()).client_id("tidings-bench");
    let topology = Topology::new(&client)?;
    let mut topics = Vec::new();
    for prefix in ["bench-drain-raw", "bench-drain-transport", "bench-drain"] {
        let topic: &'static str = Box::leak(unique_name(prefix).into_boxed_str());
        let options = TopicOptions::default().partitions(PARTITIONS);
        topology.create(topic, &options).await.map_err(|e| {
            anyhow::anyhow!("Kafka at {}: {e}; run {SETUP_COMMAND}", kafka_brokers())
        })?;
        topics.push(topic);
    }
    let store = env.store("drain_kafka", Retention::Delete).await?;
    let result = async {
        let relayed = drain(env, sizes, &client, &store, &topics, report).await?;
        consume(env, sizes, &client, topics[2], relayed + 1, report).await
    }
    .await;
    env.drop_store(&store).await?;
    // The topics stay: deleting topics on the stand-in broker while
    // clients run has crashed librdkafka; its memory storage forgets them
    // on restart.
    result
}

async fn drain(
    env: &Env,
    sizes: &Sizes,
    client: &ClientOptions,
    store: &PgOutboxStore,
    topics: &[&'static str],
    report: Report<'_>,
) -> anyhow::Result<usize> {
    // Each side runs in each position twice and right after each other
    // twice.
    let sides = [Side::Raw, Side::Transport, Side::Relay];
    let stores = std::slice::from_ref(store);
    let rounds = DrainRounds::new(env, stores, sides, sizes.drain_events).await?;
    let (per_round, total) = (rounds.per_round, rounds.total());
    let window = sizes.batch_size;
    let raw = raw_producer()?;
    let raw_envelopes = envelopes(topics[0], per_round)?;
    let transport = KafkaPublisher::new(client, PublisherOptions::default())?;
    let transport_envelopes = envelopes(topics[1], per_round)?;
    // Every side connects and learns its topic untimed.
    transport.publish(&transport_envelopes[0]).await?;
    produce_all(&raw, &raw_envelopes[..1], 1).await?;
    let publisher = KafkaPublisher::new(client, PublisherOptions::default())?;
    let (spec, relay) = warm_relay(store, publisher, topics[2], RelayOptions::default()).await?;
    let mut took = [Duration::ZERO; 3];
    let mut relayed = 0;
    for &order in &rounds.orders {
        rounds.stage(env, [(store, spec)]).await?;
        for side in order {
            took[side as usize] += match side {
                Side::Raw => produce_all(&raw, &raw_envelopes, window).await?,
                Side::Transport => {
                    publish_through(&transport, &transport_envelopes, window).await?
                }
                Side::Relay => {
                    let started = Instant::now();
                    relayed += relay.drain().await?.published;
                    started.elapsed()
                }
            };
        }
    }
    anyhow::ensure!(relayed == total, "relayed {relayed} of {total} events");
    let raw_rate = Figure::rate(
        NAME,
        "raw librdkafka producing",
        total,
        took[Side::Raw as usize],
    );
    report(raw_rate.clone());
    let alone = Figure::rate(
        NAME,
        "KafkaPublisher alone",
        total,
        took[Side::Transport as usize],
    );
    report(alone.limit(raw_rate.value));
    report(
        Figure::rate(
            NAME,
            "relayed events (default relay)",
            total,
            took[Side::Relay as usize],
        )
        .limit(raw_rate.value)
        .goal(Goal::RatioAtLeast(0.85)),
    );
    Ok(relayed)
}

/// The consumer with the PostgreSQL inbox on `topic`, whose `count`
/// records are the drained ones and the warm-up one: one transaction each,
/// then batches; against plain two-row transactions.
async fn consume(
    env: &Env,
    sizes: &Sizes,
    client: &ClientOptions,
    topic: &'static str,
    count: usize,
    report: Report<'_>,
) -> anyhow::Result<()> {
    let raw = env.store("kafka_raw", Retention::Delete).await?;
    let single = env.store("kafka_one", Retention::Delete).await?;
    let batched = env.store("kafka_batch", Retention::Delete).await?;
    let result = async {
        for store in [&raw, &single, &batched] {
            create_invoices(store).await?;
        }
        let raw_took = super::consume::two_row_transactions(&raw, sizes.clients, count).await?;
        let raw_rate = Figure::rate(NAME, "raw two-row transactions", count, raw_took);
        report(raw_rate.clone());
        for (store, batch) in [(&single, 1), (&batched, sizes.consume_batch)] {
            let source = tidings_kafka::KafkaSource::new(
                client,
                tidings_kafka::SourceOptions::new(unique_name("bench-billing")).prefetch(256),
            )?;
            let took = consume_from(store, source, topic, count, sizes.clients, batch).await?;
            let measure = match batch {
                1 => "consumed messages, one transaction each".to_owned(),
                n => format!("consumed messages, batches of up to {n}"),
            };
            report(Figure::rate(NAME, &measure, count, took).limit(raw_rate.value));
        }
        Ok(())
    }
    .await;
    for store in [&raw, &single, &batched] {
        env.drop_store(store).await?;
    }
    result
}

/// An idempotent producer with librdkafka's defaults otherwise, as the
/// transport's.
fn raw_producer() -> anyhow::Result<FutureProducer> {
    Ok(rdkafka::ClientConfig::new()
        .set("bootstrap.servers", kafka_brokers())
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .create()?)
}

/// Produces `envelopes` as records with the transport's headers and key,
/// `window` at a time, awaiting every acknowledgement of a window before
/// sending the next.
async fn produce_all(
    producer: &FutureProducer,
    envelopes: &[Envelope],
    window: usize,
) -> anyhow::Result<Duration> {
    in_windows(envelopes, window, |chunk| async move {
        let deliveries = (chunk.iter())
            .map(|envelope| produce(producer, envelope))
            .collect::<anyhow::Result<Vec<_>>>()?;
        try_join_all(deliveries).await?;
        Ok(())
    })
    .await
}

/// Sends `envelope` as a record with the transport's headers and key;
/// the future returned resolves with its acknowledgement.
fn produce(
    producer: &FutureProducer,
    envelope: &Envelope,
) -> anyhow::Result<impl Future<Output = anyhow::Result<()>>> {
    let mut headers = OwnedHeaders::new();
    for (name, value) in to_attributes(envelope) {
        let name = match name.strip_prefix("ce-") {
            Some(rest) => format!("ce_{rest}"),
            None => name,
        };
        headers = headers.insert(Header {
            key: &name,
            value: Some(value.as_bytes()),
        });
    }
    let mut record = FutureRecord::<[u8], [u8]>::to(&envelope.destination)
        .payload(&envelope.payload[..])
        .headers(headers);
    if let Some(key) = &envelope.ordering_key {
        record = record.key(key.as_bytes());
    }
    let delivery = producer
        .send_result(record)
        .map_err(|(e, _)| anyhow::anyhow!("produce: {e}"))?;
    Ok(async move {
        delivery
            .await?
            .map(|_| ())
            .map_err(|(e, _)| anyhow::anyhow!("produce: {e}"))
    })
}
