#![doc = include_str!("../README.md")]

mod admin;
mod batch;
mod claim;
mod context;
mod document;
mod error;
mod filters;
mod inbox;
mod indexes;
mod names;
mod options;
mod outbox;
mod read;
mod rerun;
mod schema;
mod settle;
mod store;
mod transaction;
mod unreadable;
mod watch;

pub use batch::MongoBatch;
pub use context::MongoContext;
pub use error::CommitError;
pub use inbox::MongoInboxStore;
pub use names::MAX_COLLECTION_NAME_LEN;
pub use options::MongoOutboxOptions;
pub use store::MongoOutboxStore;
pub use tidings_core::Retention;
pub use watch::MongoWakeupSource;

/// The driver this crate is built on, for building the client and the
/// documents of your own operations with the same version.
pub use mongodb;
