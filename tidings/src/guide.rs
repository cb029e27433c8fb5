//! The user guide (`docs/src`, an mdBook), one module per chapter, so
//! `cargo test --doc -p tidings --all-features` compiles and runs every
//! Rust snippet in it. Compiled only for doctests.
//!
//! Every chapter listed in `docs/src/SUMMARY.md` is named here;
//! `tests/guide.rs` fails when one is missing.

/// One empty module per chapter, documented by the chapter's markdown.
macro_rules! chapters {
    ($($(#[$cfg:meta])* $name:ident => $path:literal,)*) => {
        $(
            $(#[$cfg])*
            #[doc = include_str!(concat!("../../docs/src/", $path))]
            pub mod $name {}
        )*
    };
}

chapters! {
    introduction => "introduction.md",
    glossary => "concepts/glossary.md",
    guarantees => "concepts/guarantees.md",
    crashes => "concepts/crashes.md",
    specs => "concepts/specs.md",
    quick_start => "quick-start.md",
    staging_new_transaction => "staging/new-transaction.md",
    staging_your_transaction => "staging/your-transaction.md",
    staging_http_handlers => "staging/http-handlers.md",
    staging_options => "staging/options.md",
    relay_running => "relay/running.md",
    relay_retries => "relay/retries.md",
    relay_claim_modes => "relay/claim-modes.md",
    relay_wakeups => "relay/wakeups.md",
    relay_ordering => "relay/ordering.md",
    #[cfg(feature = "wal")]
    relay_log_tailing => "relay/log-tailing.md",
    consumer_handlers => "consumer/handlers.md",
    consumer_event_types => "consumer/event-types.md",
    consumer_stored_inbox => "consumer/stored-inbox.md",
    consumer_layers => "consumer/layers.md",
    consumer_poison => "consumer/poison.md",
    consumer_key_order => "consumer/key-order.md",
    consumer_batching => "consumer/batching.md",
    consumer_shutdown => "consumer/shutdown.md",
    stores_postgres => "stores/postgres.md",
    stores_mongo => "stores/mongo.md",
    brokers_rabbitmq => "brokers/rabbitmq.md",
    brokers_sqs => "brokers/sqs.md",
    #[cfg(feature = "kafka")]
    brokers_kafka => "brokers/kafka.md",
    operations_migrations => "operations/migrations.md",
    operations_cli => "operations/cli.md",
    operations_console => "operations/console.md",
    operations_metrics => "operations/metrics.md",
    operations_tracing => "operations/tracing.md",
    production_tls => "production/tls.md",
    production_poolers => "production/poolers.md",
    production_connections => "production/connections.md",
    production_retention => "production/retention.md",
    testing => "testing.md",
    benchmarks => "benchmarks.md",
}
