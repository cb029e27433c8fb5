#![doc = include_str!("../README.md")]

mod attempts;
mod batch;
mod dispatch;
mod error;
mod expired;
mod give_up;
mod handler;
mod isolation;
mod key_order;
mod metric;
mod options;
mod parts;
mod process;
mod queue_ref;
mod report;
mod runner;
mod stored;
mod typed;

pub use error::HandlerError;
pub use expired::Expired;
pub use handler::{Handler, HandlerFn, HandlerRequest, TxHandle, handler_fn};
pub use key_order::KeyOrder;
pub use options::ConsumerOptions;
pub use queue_ref::QueueRef;
pub use report::ConsumerReport;
pub use runner::{Consumer, run_consumer};
pub use stored::{StoredConsumer, StoredInbox};
pub use tidings_inbox::{Inbox, InboxCleaner, InboxCleanerOptions, NoInbox};
pub use typed::{EventHandlers, PerTypeCodec, TypeOptions, TypeRouter, Undecoded, UnknownType};
