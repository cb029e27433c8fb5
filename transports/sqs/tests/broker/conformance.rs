//! The broker conformance suite on standard and on FIFO SQS queues, and the
//! foreign-producer suite on standard queues.

mod standard {
    use crate::support::Sqs;

    tidings_testing::broker_conformance!(Sqs { fifo: false });
    tidings_testing::foreign_producer_conformance!(Sqs { fifo: false });
}

mod fifo {
    use crate::support::Sqs;

    tidings_testing::broker_conformance!(Sqs { fifo: true });
}
