//! The broker conformance suite and the foreign-producer suite from
//! `tidings-testing`, on topics of one partition.

use crate::support::Kafka;

tidings_testing::broker_conformance!(Kafka);
tidings_testing::foreign_producer_conformance!(Kafka);
