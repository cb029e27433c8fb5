//! The broker conformance suite on FIFO SQS queues.

mod common;

tidings_testing::broker_conformance!(common::Sqs { fifo: true });
