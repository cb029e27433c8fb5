//! `tidings` as a process on the stores: PostgreSQL and MongoDB outboxes
//! seen and mended, failed rows deleted, and the program as a Unix tool.
//! Every test has a schema or database of its own.
//!
//! - `postgres`: status, failed rows, purges, the inbox and the rotated
//!   layout on PostgreSQL, and bad input refused.
//! - `mongo`: indexes, status, requeues, purges and the inbox on MongoDB.
//! - `failed_delete`: `tidings failed delete`, previewed then confirmed.
//! - `operator`: pipes, exit codes, help, the environment, completions.
//! - `serve`: the console served with a stored inbox beside the store.
//! - `slot`: the replication slot of a log-tailed outbox, and requeues
//!   that stage failed events again as messages.

#[path = "../support/mod.rs"]
mod support;

mod failed_delete;
mod mongo;
mod operator;
mod postgres;
mod serve;
mod slot;
