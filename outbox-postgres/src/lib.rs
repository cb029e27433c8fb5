#![doc = include_str!("../README.md")]

mod admin;
mod announce;
mod audience;
mod claim;
mod columns;
mod context;
mod error;
mod inbox;
mod layout;
mod listener;
mod migrate;
mod names;
mod options;
mod outbox;
mod params;
mod pooling;
mod rotation;
mod script;
mod sql;
mod store;
pub mod tailing;
#[cfg(feature = "wal")]
pub mod wal;

pub use claim::batch::PgBatch;
pub use context::PgContext;
pub use error::CommitError;
pub use inbox::PgInboxStore;
pub use layout::{Layout, MAX_MOVED, SLOT_SECONDS, SLOTS};
pub use listener::PgWakeupSource;
pub use names::MAX_IDENTIFIER_LEN;
pub use options::{ClaimMode, PgOutboxOptions};
pub use pooling::Pooling;
pub use rotation::Rotation;
pub use store::PgOutboxStore;
pub use tailing::{LogTailing, TailMode};
pub use tidings_core::Retention;

/// The sqlx this crate is built on, so a service uses the same version.
pub use sqlx;
