//! The engine around the stores: the relay against the in-memory store, a
//! manual clock and a scripted publisher, what it and the monitor report
//! through the `metrics` facade, and the lifecycle plan running them. The
//! metrics tests record through a recorder local to their own thread, so
//! the tests beside them leave their figures alone.
//!
//! - `relay`: retries, poison, leases, crash loops, backlogs and wake-ups.
//! - `lifecycle`: restarts, ordered shutdown, deadlines.
//! - `metrics`: what the relay and the monitor report.

#[path = "../support/mod.rs"]
mod support;

mod lifecycle;
mod metrics;
mod relay;
