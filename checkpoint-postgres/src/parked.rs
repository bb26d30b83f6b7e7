//! [`ParkedStore`] on PostgreSQL: parked entries in `<table>_parked`, one statement per
//! operation (see the crate doc, "Parked entries").

use checkpoint_core::door::{Checked, ParkedDoor};
use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Error, Operation};

use crate::store::PostgresCheckpointStore;

impl ParkedDoor for PostgresCheckpointStore {
    /// One statement (`sql/park.sql`, an upsert); idempotent, so run once more on a lost
    /// connection.
    async fn park(&self, _checked: Checked, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
        self.on_pool(Operation::Park)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self.requests.park(&mut connection, group, entry).await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/parked.sql`); run once more on a lost connection.
    async fn parked(&self, _checked: Checked, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        self.on_pool(Operation::Parked)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self.requests.parked(&mut connection, group).await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/retry_parked.sql`); idempotent (a second run finds the entry
    /// still parked), so run once more on a lost connection.
    async fn retry_parked(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        self.on_pool(Operation::RetryParked)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .retry_parked(&mut connection, (group, subscription), partition, position)
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/unpark.sql`). Not run a second time on a lost connection: had the
    /// first attempt committed, the second would report the entry as not parked.
    async fn unpark(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        self.on_pool(Operation::Unpark)
            .run(|mut connection| async move {
                let reply = self
                    .requests
                    .unpark(&mut connection, (group, subscription), partition, position)
                    .await;
                (connection, reply)
            })
            .await
    }
}
