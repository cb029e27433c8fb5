//! The broker conformance suite from `tidings-testing`, on classic and on
//! quorum queues, and the foreign-producer suite on classic queues.

mod support;

mod classic {
    use super::support::Rabbit;
    use tidings_rabbitmq::QueueKind;

    tidings_testing::broker_conformance!(Rabbit::new(QueueKind::Classic));
    tidings_testing::foreign_producer_conformance!(Rabbit::new(QueueKind::Classic));
}

mod quorum {
    use super::support::Rabbit;
    use tidings_rabbitmq::QueueKind;

    tidings_testing::broker_conformance!(Rabbit::new(QueueKind::Quorum));
}
