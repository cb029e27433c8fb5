#![doc = include_str!("../README.md")]

mod cleaner;
mod inbox;
mod no_inbox;

pub use cleaner::{InboxCleaner, InboxCleanerOptions};
pub use inbox::Inbox;
pub use no_inbox::NoInbox;
