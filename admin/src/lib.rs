#![doc = include_str!("../README.md")]

pub mod dead_letters;
mod error;
mod inbox;
mod outbox;
#[cfg(feature = "page")]
pub mod page;
mod stores;
mod tenants;
mod views;

pub use error::AdminError;
pub use inbox::HandledEvent;
pub use outbox::Admin;
pub use stores::AdminStore;
pub use tenants::{TenantStatus, Tenants};
pub use views::{ConsumerStatus, PurgeReport, RouteStatus, Status};

#[cfg(feature = "kafka")]
pub use tidings_kafka;
#[cfg(feature = "mongo")]
pub use tidings_mongo;
#[cfg(feature = "postgres")]
pub use tidings_postgres;
#[cfg(feature = "rabbitmq")]
pub use tidings_rabbitmq;
#[cfg(feature = "sqs")]
pub use tidings_sqs;
