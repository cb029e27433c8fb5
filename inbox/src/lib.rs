#![doc = include_str!("../README.md")]

mod cleaner;
mod inbox;
mod no_inbox;

pub use cleaner::InboxCleaner;
pub use inbox::Inbox;
pub use no_inbox::NoInbox;
