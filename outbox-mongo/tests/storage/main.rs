//! How the store keeps its documents on MongoDB: staging in the caller's
//! transaction, settling batches whose lease was taken early, and
//! collections, indexes and documents the store did not write.
//!
//! - `staging`: events commit with the caller's writes or not at all.
//! - `settle`: fenced writes touch only what the lease still holds.
//! - `schema`: hostile names, missing indexes, unreadable documents.

#[path = "../support/mod.rs"]
mod support;

mod schema;
mod settle;
mod staging;
