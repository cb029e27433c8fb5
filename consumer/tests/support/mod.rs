//! What the consumer's integration tests share: the in-memory backend's
//! orders and effects, and a PostgreSQL inbox beside a RabbitMQ queue.
#![allow(dead_code)]

pub(crate) mod memory;
pub(crate) mod postgres_rabbitmq;
