//! [`ParkedDoor`] of [`SqlStore`].

use checkpoint_core::door::{Checked, ParkedDoor};
use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::{Error, Operation};

use crate::engine::Engine;
use crate::requests::{Parked, Statements};
use crate::store::SqlStore;

impl<E: Engine> ParkedDoor for SqlStore<E> {
    async fn send_park(&self, _: Checked, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
        self.run(Operation::Park, |mut connection| async move {
            let reply = self
                .requests
                .parked()
                .park(&mut connection, group, entry)
                .await;
            (connection, reply)
        })
        .await
    }

    async fn send_parked(&self, _: Checked, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        self.run(Operation::Parked, |mut connection| async move {
            let reply = self.requests.parked().parked(&mut connection, group).await;
            (connection, reply)
        })
        .await
    }

    async fn send_retry_parked(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        self.run(Operation::RetryParked, |mut connection| async move {
            let parked = self.requests.parked();
            let key = (group, subscription);
            let reply = parked
                .retry_parked(&mut connection, key, partition, position)
                .await;
            (connection, reply)
        })
        .await
    }

    async fn send_unpark(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        self.run(Operation::Unpark, |mut connection| async move {
            let parked = self.requests.parked();
            let key = (group, subscription);
            let reply = parked
                .unpark(&mut connection, key, partition, position)
                .await;
            (connection, reply)
        })
        .await
    }
}
