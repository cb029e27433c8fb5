//! The operator console in a real headless browser (Debian's Chromium
//! driven over WebDriver) against PostgreSQL and RabbitMQ. Each browser
//! test saves a screenshot under Cargo's test scratch directory
//! (`target/tmp/`): `console-healthy.png`, `console-backlog-chart.png`,
//! `console-failed-rows.png`, `console-dead-letter-open.png`,
//! `console-read-only.png`, `console-broken-section.png` and
//! `console-stored-inbox.png`, and asserts
//! what a person would check on it.

mod api;
mod dead_letters;
mod failed_rows;
mod live;
mod read_only;
mod stored_inbox;
mod support;
