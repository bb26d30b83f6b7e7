//! [`ParkedStore`](checkpoint_core::parked::ParkedStore)'s requests: one statement each on
//! `<table>_parked`, in autocommit mode.

use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Error, Operation};
use checkpoint_sql::parked;
use sqlx::mysql::MySqlConnection;

use super::{MysqlEngine, Requests};

impl Requests {
    /// Records `entry`, or replaces its record (`sql/park.sql`).
    pub(crate) async fn park(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
        entry: &ParkedEntry,
    ) -> Result<(), Error> {
        parked::park::<MysqlEngine, _>(connection, &self.parked.park, group, entry).await
    }

    /// Every entry parked under `group`, sorted (`sql/parked.sql`).
    pub(crate) async fn parked(
        &self,
        connection: &mut MySqlConnection,
        group: &str,
    ) -> Result<Vec<ParkedEntry>, Error> {
        parked::parked::<MysqlEngine, _>(connection, &self.parked.list, group).await
    }

    /// Sets the entry's retry request; whether it was parked.
    pub(crate) async fn retry_parked(
        &self,
        connection: &mut MySqlConnection,
        key: (&str, &str),
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let statement = (Operation::RetryParked, &self.parked.retry);
        parked::on_parked_key::<MysqlEngine, _>(connection, statement, key, partition, position)
            .await
    }

    /// Removes the entry; whether it was parked.
    pub(crate) async fn unpark(
        &self,
        connection: &mut MySqlConnection,
        key: (&str, &str),
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let statement = (Operation::Unpark, &self.parked.unpark);
        parked::on_parked_key::<MysqlEngine, _>(connection, statement, key, partition, position)
            .await
    }
}
