//! The broker conformance suite on FIFO SQS queues.

mod support;

tidings_testing::broker_conformance!(support::Sqs { fifo: true });
