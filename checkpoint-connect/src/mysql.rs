//! What only MySQL and MariaDB need before their pool opens.

use checkpoint_core::{Error, Operation};
use sqlx::Connection;
use sqlx::mysql::{MySqlConnectOptions, MySqlConnection};

/// One plain connection to MySQL or MariaDB, closed at once, before a pool is used: the pool
/// retries a refused connection until its acquire timeout and then reports only that it timed
/// out; this one says why (refused, unknown database, access denied).
///
/// # Errors
///
/// [`Error::Backend`] with [`Operation::Connect`], retryable for an I/O error, whose message
/// never holds the URL.
pub async fn probe(options: &MySqlConnectOptions) -> Result<(), Error> {
    let probe_failed = |error: sqlx::Error| {
        let retryable = matches!(error, sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut);
        Error::backend(
            checkpoint_mysql::BACKEND,
            Operation::Connect,
            retryable,
            error,
        )
    };
    MySqlConnection::connect_with(options)
        .await
        .map_err(probe_failed)?
        .close()
        .await
        .map_err(probe_failed)
}
