//! Closing one of this test's own connections from the server side.

pub use tidings_testing::faults::close_rabbitmq_connection as close_connection;
