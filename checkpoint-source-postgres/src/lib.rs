//! A PostgreSQL event-table source (crate doc written below).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod append;
mod error;
mod layout;
mod listener;
pub mod position;
mod schema;
mod source;
mod statements;

pub use listener::LISTENER_APPLICATION_NAME;
pub use source::{DEFAULT_POLL_INTERVAL, DEFAULT_TIMEOUT, PostgresSource};

/// The name of the backend in errors: `"postgres"`.
pub const BACKEND: &str = "postgres";

/// The table a source reads unless [`PostgresSource::with_table`] says otherwise.
pub const DEFAULT_TABLE: &str = "events";

/// The partition column unless [`PostgresSource::with_partition_column`] says otherwise.
pub const DEFAULT_PARTITION_COLUMN: &str = "partition";

/// The sequence column unless [`PostgresSource::with_sequence_column`] says otherwise.
pub const DEFAULT_SEQUENCE_COLUMN: &str = "seq";
