//! The broker conformance suite on standard SQS queues.

mod common;

tidings_testing::broker_conformance!(common::Sqs { fifo: false });
