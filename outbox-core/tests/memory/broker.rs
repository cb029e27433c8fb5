//! The broker conformance suite on the in-memory broker.

use tidings_core::memory::MemoryBroker;
use tidings_testing::broker::{BrokerFixture, BrokerHarness};
use tidings_testing::names::unique_name;

struct Memory;

impl BrokerHarness for Memory {
    type Publisher = MemoryBroker;
    type Source = MemoryBroker;

    async fn fixture(&self) -> BrokerFixture<MemoryBroker, MemoryBroker> {
        let broker = MemoryBroker::new();
        let queue = unique_name("queue");
        let dead_letter_queue = broker.declare_queue(&queue);
        BrokerFixture {
            publisher: broker.clone(),
            source: broker,
            queue,
            dead_letter_queue,
        }
    }
}

tidings_testing::broker_conformance!(Memory);
