#![doc = include_str!("../README.md")]

mod admin;
mod announce;
mod audience;
mod batch;
mod claim_connections;
mod claim_records;
mod claim_sql;
mod context;
mod error;
mod inbox;
mod listener;
mod literal;
mod locked;
mod migrate;
mod names;
mod options;
mod outbox;
mod outcomes;
mod pooled_claim;
mod pooling;
mod record;
mod sql;
mod store;
mod text_format;

pub use batch::PgBatch;
pub use context::PgContext;
pub use error::CommitError;
pub use inbox::PgInboxStore;
pub use listener::PgWakeupListener;
pub use names::MAX_IDENTIFIER_LEN;
pub use options::{ClaimMode, PgOutboxOptions, Retention};
pub use pooling::Pooling;
pub use store::PgOutboxStore;

/// The sqlx this crate is built on, so a service uses the same version.
pub use sqlx;
