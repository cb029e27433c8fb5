//! Claims and relaying on PostgreSQL beyond the conformance suites: locked
//! claims, their connections, records and transactions begun ahead,
//! per-key claims, rows a claim cannot read, the wake-up and its hints,
//! and the whole path from staging to a consumer.
//!
//! - `begun_ahead`: transactions a settle begins ahead of the next claim.
//! - `claim_connections`: the connections locked claims run on.
//! - `claim_records`: the records naming a locked claim's rows.
//! - `end_to_end`: staging, relay and consumer with its inbox.
//! - `hints`: wake-up hints, sent only where somebody hears them.
//! - `locked`: rows held by locks until they settle.
//! - `per_key`: per-key order, requeues and places.
//! - `unreadable_rows`: rows failed in place when they cannot be read.
//! - `wakeup`: LISTEN/NOTIFY and the in-process wake-up.

#[path = "../support/mod.rs"]
mod support;

mod begun_ahead;
mod claim_connections;
mod claim_records;
mod end_to_end;
mod hints;
mod locked;
mod per_key;
mod unreadable_rows;
mod wakeup;
