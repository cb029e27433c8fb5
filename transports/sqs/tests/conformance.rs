//! The broker conformance suite and the foreign-producer suite on standard
//! SQS queues.

mod support;

tidings_testing::broker_conformance!(support::Sqs { fifo: false });
tidings_testing::foreign_producer_conformance!(support::Sqs { fifo: false });
