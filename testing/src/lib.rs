#![doc = include_str!("../README.md")]

pub mod broker;
pub mod consumer;
pub mod eventually;
pub mod faults;
pub mod http;
pub mod inbox;
pub mod ledger;
pub mod names;
#[cfg(feature = "otel")]
pub mod otel;
pub mod publisher;
pub mod services;
pub mod store;

/// Expands to one `#[tokio::test]` per case named, each calling the case
/// `$crate::<suite>::<case>` with the harness expression, then `teardown`
/// on it. The suites' own macros ([`store_conformance!`],
/// [`broker_conformance!`], [`inbox_conformance!`],
/// [`foreign_producer_conformance!`]) expand to this.
#[doc(hidden)]
#[macro_export]
macro_rules! conformance_cases {
    (@case [$($suite:tt)*] $case:ident) => {
        $crate::$($suite)*::$case
    };
    ($suite:tt, $teardown:path, $harness:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness = $harness;
                $crate::conformance_cases!(@case $suite $case)(&harness).await;
                $teardown(&harness).await;
            }
        )*
    };
}
