//! What the consumer's integration tests share: the in-memory backend's
//! orders and effects, a PostgreSQL inbox beside a RabbitMQ queue, and the
//! parent/child runner of the files that are their own harness.
#![allow(dead_code)]

pub(crate) mod ids;
pub(crate) mod memory;
pub(crate) mod postgres_rabbitmq;
pub(crate) mod staging;
