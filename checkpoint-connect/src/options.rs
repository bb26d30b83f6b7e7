//! [`Options`]: what a store takes beside its URL, checked against the store it names.

use std::time::Duration;

use crate::error::ConnectError;
use crate::store_url::StoreUrl;

/// What a store takes beside its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// PostgreSQL's, MySQL's and SQLite's table (`table`, or `schema.table` on PostgreSQL);
    /// the backend's default when `None`. DynamoDB's table is in its URL.
    pub table: Option<String>,
    /// Redis's key prefix; the backend's default when `None`.
    pub key_prefix: Option<String>,
    /// Bounds the whole opening, and then each request of the store (its `with_timeout`).
    pub timeout: Duration,
    /// Create what the store needs when it is missing: a SQLite file, the tables
    /// (`migrate`), DynamoDB's table (`create_table`). Off by default: an operator's typo must
    /// not create an empty database.
    pub create: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            table: None,
            key_prefix: None,
            timeout: checkpoint_core::DEFAULT_TIMEOUT,
            create: false,
        }
    }
}

impl Options {
    /// The default options: the backend's table or prefix,
    /// [`DEFAULT_TIMEOUT`](checkpoint_core::DEFAULT_TIMEOUT), nothing created.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses the table `name` (PostgreSQL, MySQL, SQLite).
    pub fn table(mut self, name: impl Into<String>) -> Self {
        self.table = Some(name.into());
        self
    }

    /// Uses the key prefix `prefix` (Redis).
    pub fn key_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.key_prefix = Some(prefix.into());
        self
    }

    /// Bounds the opening and each request by `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Creates the database file, tables or table when missing (see [`Options::create`]).
    pub fn create(mut self, create: bool) -> Self {
        self.create = create;
        self
    }
}

impl Options {
    /// Checks, before any request, that the store `url` names has the settings given: a
    /// table for PostgreSQL, MySQL and SQLite, a key prefix for Redis. [`open`](crate::open)
    /// checks it first.
    ///
    /// # Errors
    ///
    /// [`ConnectError::Setting`] naming the setting and the backends that have it; the
    /// store's invalid input (`Argument::Setting("timeout")`) for a zero timeout.
    pub fn check_for(&self, url: &StoreUrl) -> Result<(), ConnectError> {
        // A zero timeout would otherwise fail as a timeout of the opening, not as the setting.
        checkpoint_core::settings::validate_timeout(self.timeout)?;
        check_settings(url, self)
    }
}

/// `table` and `key_prefix` where the backend has them.
fn check_settings(url: &StoreUrl, options: &Options) -> Result<(), ConnectError> {
    let takes_table = matches!(
        url,
        StoreUrl::Postgres(_) | StoreUrl::Mysql(_) | StoreUrl::Sqlite(_)
    );
    let takes_prefix = matches!(url, StoreUrl::Redis(_) | StoreUrl::RedisCluster(_));
    if options.table.is_some() && !takes_table {
        return Err(ConnectError::Setting {
            setting: "table",
            backends: "PostgreSQL, MySQL and SQLite",
            backend: url.backend(),
        });
    }
    if options.key_prefix.is_some() && !takes_prefix {
        return Err(ConnectError::Setting {
            setting: "key_prefix",
            backends: "Redis",
            backend: url.backend(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_setting_belongs_to_its_backends() {
        let postgres = StoreUrl::Postgres("postgres://h/db".into());
        let mysql = StoreUrl::Mysql("mysql://h/db".into());
        let redis = StoreUrl::Redis("redis://h".into());
        let dynamodb = StoreUrl::DynamoDb("t".into());
        assert!(check_settings(&postgres, &Options::new().table("app.cp")).is_ok());
        assert!(check_settings(&mysql, &Options::new().table("cp")).is_ok());
        assert!(check_settings(&redis, &Options::new().key_prefix("cp")).is_ok());
        for (url, options) in [
            (&redis, Options::new().table("t")),
            (&dynamodb, Options::new().table("t")),
            (&postgres, Options::new().key_prefix("cp")),
            (&mysql, Options::new().key_prefix("cp")),
        ] {
            let error = check_settings(url, &options).unwrap_err();
            assert!(
                matches!(error, ConnectError::Setting { .. }),
                "{url:?}: {error:?}"
            );
        }
    }

    #[test]
    fn a_zero_timeout_is_refused_as_the_setting_it_is() {
        let url = StoreUrl::Sqlite("x.db".into());
        let error = Options::new()
            .timeout(Duration::ZERO)
            .check_for(&url)
            .unwrap_err();
        assert!(
            matches!(
                error,
                ConnectError::Store(checkpoint_core::Error::InvalidInput(_))
            ),
            "{error:?}"
        );
    }
}
