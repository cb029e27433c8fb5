//! The broker conformance suite and the foreign-producer suite on standard
//! SQS queues.

mod common;

tidings_testing::broker_conformance!(common::Sqs { fifo: false });
tidings_testing::foreign_producer_conformance!(common::Sqs { fifo: false });
