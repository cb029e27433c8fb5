//! Specs: plain data, defined once as constants and shared by producer and
//! consumer.
//!
//! An [`OutboxSpec`] names a stream of events, the codec of their payload,
//! the queue they are relayed to, their ordering mode and retry policy. A
//! [`QueueSpec`] names the queue a consumer reads and the codec it decodes
//! with. The outbox spec's destination must equal the queue spec's name;
//! [`OutboxSpec::check_pair`] says so with a clear error.
//!
//! ```
//! use tidings_core::{OutboxSpec, QueueSpec};
//!
//! #[derive(serde::Serialize, serde::Deserialize)]
//! struct OrderPlaced { id: u64 }
//!
//! static ORDER_EVENTS: OutboxSpec<OrderPlaced> =
//!     OutboxSpec::json("order-events").destination("orders").per_key();
//! static ORDERS: QueueSpec<OrderPlaced> = QueueSpec::json("orders");
//!
//! ORDER_EVENTS.check_pair(&ORDERS).unwrap();
//! ```

mod error;
mod name;
mod outbox;
mod queue;
mod retry;

pub use error::SpecError;
pub use name::{MAX_NAME_LEN, validate_name};
pub use outbox::{OrderingMode, OutboxSpec, Route};
pub use queue::QueueSpec;
pub use retry::RetryPolicy;
