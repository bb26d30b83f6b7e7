//! [`ParkedStore`](checkpoint_core::parked::ParkedStore) on MySQL and MariaDB: parked entries
//! in `<table>_parked`, one statement per operation in autocommit mode (see the crate doc,
//! "Parked entries"). The door's requests; the front is core's.

use checkpoint_core::door::{Checked, ParkedDoor};
use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Error, Operation};

use crate::store::MysqlCheckpointStore;

impl ParkedDoor for MysqlCheckpointStore {
    /// One statement (`sql/park.sql`, an upsert).
    async fn park(&self, _checked: Checked, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
        let mut connection = self.connection(Operation::Park).await?;
        self.requests.park(&mut connection, group, entry).await
    }

    /// One statement (`sql/parked.sql`).
    async fn parked(&self, _checked: Checked, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        let mut connection = self.connection(Operation::Parked).await?;
        self.requests.parked(&mut connection, group).await
    }

    /// One statement (`sql/retry_parked.sql`).
    async fn retry_parked(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let mut connection = self.connection(Operation::RetryParked).await?;
        self.requests
            .retry_parked(&mut connection, (group, subscription), partition, position)
            .await
    }

    /// One statement (`sql/unpark.sql`).
    async fn unpark(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let mut connection = self.connection(Operation::Unpark).await?;
        self.requests
            .unpark(&mut connection, (group, subscription), partition, position)
            .await
    }
}
