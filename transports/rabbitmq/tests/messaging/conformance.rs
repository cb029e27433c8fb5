//! The broker conformance suite from `tidings-testing`, on classic and on
//! quorum queues, and the foreign-producer suite on classic queues.

mod classic {
    use crate::support::Rabbit;
    use tidings_rabbitmq::QueueKind;

    tidings_testing::broker_conformance!(Rabbit::new(QueueKind::Classic));
    tidings_testing::foreign_producer_conformance!(Rabbit::new(QueueKind::Classic));
}

mod quorum {
    use crate::support::Rabbit;
    use tidings_rabbitmq::QueueKind;

    tidings_testing::broker_conformance!(Rabbit::new(QueueKind::Quorum));
}
