#![doc = include_str!("../README.md")]

pub mod broker;
pub mod consumer;
pub mod eventually;
pub mod faults;
pub mod inbox;
pub mod ledger;
pub mod names;
#[cfg(feature = "otel")]
pub mod otel;
pub mod services;
pub mod store;
