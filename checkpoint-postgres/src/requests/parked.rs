//! [`ParkedStore`](checkpoint_core::parked::ParkedStore)'s requests: one statement each on
//! `<table>_parked`.

use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Error, Operation};
use checkpoint_sql::parked;
use sqlx::postgres::PgConnection;

use super::{PgEngine, Requests};

impl Requests {
    /// Records `entry`, or replaces its record (`sql/park.sql`).
    pub(crate) async fn park(
        &self,
        connection: &mut PgConnection,
        group: &str,
        entry: &ParkedEntry,
    ) -> Result<(), Error> {
        parked::park::<PgEngine, _>(connection, &self.park, group, entry).await
    }

    /// Every entry parked under `group`, sorted (`sql/parked.sql`).
    pub(crate) async fn parked(
        &self,
        connection: &mut PgConnection,
        group: &str,
    ) -> Result<Vec<ParkedEntry>, Error> {
        parked::parked::<PgEngine, _>(connection, &self.parked, group).await
    }

    /// Sets the entry's retry request; whether it was parked.
    pub(crate) async fn retry_parked(
        &self,
        connection: &mut PgConnection,
        key: (&str, &str),
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let statement = (Operation::RetryParked, &self.retry_parked);
        parked::on_parked_key::<PgEngine, _>(connection, statement, key, partition, position).await
    }

    /// Removes the entry; whether it was parked.
    pub(crate) async fn unpark(
        &self,
        connection: &mut PgConnection,
        key: (&str, &str),
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let statement = (Operation::Unpark, &self.unpark);
        parked::on_parked_key::<PgEngine, _>(connection, statement, key, partition, position).await
    }
}
