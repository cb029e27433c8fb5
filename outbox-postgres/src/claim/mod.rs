//! The relay's claim and settle path: how a batch of rows is taken, held
//! while it is published, and settled.
//!
//! # One claim, module by module
//!
//! [`OutboxStore::claim`](tidings_core::OutboxStore::claim) asks
//! [`batch`] for a [`PgBatch`](batch::PgBatch), which claims in the store's
//! [`ClaimMode`](crate::ClaimMode): [`leased`] or [`locked`]. Both run a
//! statement of [`statements`], the claim templates with the batch's row
//! limit written in, starting where the route's cursor says (a per-key
//! route's is kept in [`keys`]), and read its rows back with [`row`],
//! setting aside those no record can be read from ([`unreadable`]). A
//! locked claim runs on one of the store's [`own`] connections
//! ([`connections`]), or, behind a transaction pooler, on one of the
//! pool's ([`pooled`]), and writes a claim record ([`records`]) beside it.
//! Settling turns the relay's settlements into the columns the settle
//! statements bind ([`outcomes`]) and writes them where the batch holds
//! its rows.
//!
//! # Locked and leased claims
//!
//! A **leased** claim commits at once: one `UPDATE` stamps the rows
//! `in_flight` with a lease token and expiry, the relay publishes holding
//! no connection, and the settle writes under the token. A relay that dies
//! is found out when its lease expires and the sweep returns the rows.
//! Every row is written twice, and the claim's write rewrites the whole
//! row and adds index entries.
//!
//! A **locked** claim (the default) selects the rows `FOR UPDATE SKIP
//! LOCKED` in a transaction that stays open while they are published; the
//! settle writes the outcomes (mostly one `DELETE`) and commits in it.
//! Each row is written once, and the open transaction is the fence: no
//! other claim can take a locked row, and when the relay dies, or sits idle
//! in the transaction longer than the lease
//! (`idle_in_transaction_session_timeout`, set for that transaction only),
//! PostgreSQL rolls back and the rows are claimable again, untouched. This
//! costs PostgreSQL about half as much per event, so it is the default;
//! leased claims remain for publishes that may outlast any lease one
//! would set, as they hold no connection meanwhile.
//!
//! # Cursors
//!
//! A locked claim starts from the oldest claimable row, and the rows a
//! drain still holds locked, and those it has just deleted, lie right
//! there: the claim index keeps them until a vacuum, and every claim
//! walked past them, locked rows skipped one by one, before reaching rows
//! it could take. That walk cost as much as the claim itself. A locked
//! claim of an unordered route in staging order therefore returns its last
//! row id as its [`ClaimCursor`](tidings_core::ClaimCursor), and the
//! drain's next claim binds it and starts its index scan past it
//! (`claimable.sql`). Rows left behind it are taken by the relay's claims
//! from the oldest row, which it still makes now and then.
//!
//! # Per-key claims
//!
//! A per-key claim in staging order walks the route's keys rather than
//! its rows: one step of the key index per key with unfinished rows,
//! locking each key's head as it goes (`claimable_per_key.sql`), so a
//! claim finding every key held by another costs a step a key, not the
//! backlog. Its cursor ([`keys`]) gives every key its turn. Claims
//! walking side by side would each walk every key, so a locked one first
//! takes one of the route's places (`gate.sql`,
//! [`per_key_claims`](crate::PgOutboxOptions::per_key_claims)): the
//! relays beyond them stand by.
//!
//! # Claim records: crashes of locked claims
//!
//! A locked claim writes nothing to its rows, so a relay that dies leaves
//! no trace on them, and a row that kills every relay publishing it would
//! be claimed for ever. Each locked batch therefore writes a record naming
//! its rows ([`records`]), committed on a connection apart from the
//! batch's transaction, off the claim's path, and its settle deletes the
//! record in the batch's transaction. A record left past its expiry names
//! rows whose claim died unsettled: the sweep counts a crash against each
//! of them that no live claim holds, as the lease sweep does for leased
//! rows, and a row whose claims keep dying is failed as a crash loop. It
//! costs two small writes a batch instead of one a row.
//!
//! # Connections
//!
//! A locked batch holds a connection from its claim to its settle. On a
//! direct pool ([`Pooling::Direct`](crate::Pooling::Direct)) these are the
//! store's own ([`connections`]), opened with the pool's settings and kept
//! between batches, so a batch pays no pool check on the way out and back,
//! and the pool stays the user's. There a batch's claim reads its rows in
//! the binary format of the extended protocol, after its `BEGIN`, and its
//! settle goes out with its `COMMIT` in the simple protocol ([`own`]):
//! three round trips a batch (`docs/benchmarks-history.md`, *Claimed rows
//! in the binary format*).
//! Claim records are written on one more connection of the store's, never
//! on one a batch may hold: a settle waits for its record, and batches
//! holding every connection would otherwise wait for each other.
//!
//! Behind a pooler in transaction mode
//! ([`Pooling::Transaction`](crate::Pooling::Transaction), PgBouncer with
//! `pool_mode = transaction`), a session outlives no transaction, so
//! nothing may be prepared by name: a locked batch holds one of the pool's
//! connections in its transaction ([`pooled`]), sends every statement
//! unnamed, in the extended protocol, and claim records go through the
//! pool, of which locked claims always leave one connection free.
//!
//! # Wake-ups after commit
//!
//! A relay claims when woken, and staging transactions wake it after they
//! commit, not by a `NOTIFY` inside them, which would make every staging
//! commit wait for the others (see `announce`). A relay woken in the same
//! process needs no round trip at all; relays elsewhere get one coalesced
//! hint per burst of commits, and still poll, so a lost hint costs only
//! latency.

pub(crate) mod batch;
pub(crate) mod connections;
pub(crate) mod keys;
mod leased;
mod literal;
mod locked;
mod outcomes;
mod own;
mod pooled;
pub(crate) mod records;
pub(crate) mod row;
pub(crate) mod statements;
pub(crate) mod unreadable;
