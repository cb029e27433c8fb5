//! Connections to the real broker: one shared by a publisher, a source and
//! the topology, connections the server closes, and `amqps://`. The tests
//! that close a connection close it by a name no other test uses.
//!
//! - `shared`: one connection for a publisher, a source and the topology.
//! - `reconnect`: the source and the publisher resume by themselves.
//! - `tls`: private CAs, client certificates, and every refusal.

#[path = "../support/mod.rs"]
mod support;

mod reconnect;
mod shared;
mod tls;
