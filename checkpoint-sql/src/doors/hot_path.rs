//! [`CheckpointDoor`] and [`ExclusiveDoor`] of [`SqlStore`].

use checkpoint_core::door::{Checked, CheckpointDoor, ExclusiveDoor};
use checkpoint_core::{Checkpoint, Error, Fingerprint, Operation};

use crate::engine::Engine;
use crate::requests::HotPath;
use crate::store::SqlStore;

impl<E: Engine> CheckpointDoor for SqlStore<E> {
    async fn send_list(&self, _: Checked, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.run(Operation::List, |mut connection| async move {
            let reply = self.requests.list(&mut connection, group).await;
            (connection, reply)
        })
        .await
    }

    async fn send_load(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        self.run(Operation::Load, |mut connection| async move {
            let requests = &self.requests;
            let reply = requests
                .load(&mut connection, group, subscription, partition)
                .await;
            (connection, reply)
        })
        .await
    }

    async fn send_save(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        self.run(Operation::Save, |mut connection| async move {
            let requests = &self.requests;
            let reply = requests
                .save(&mut connection, group, subscription, partition, position)
                .await;
            (connection, reply)
        })
        .await
    }

    async fn send_save_all(
        &self,
        _: Checked,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> Result<(), Error> {
        self.run(Operation::SaveAll, |mut connection| async move {
            let requests = &self.requests;
            let reply = requests.save_all(&mut connection, group, checkpoints).await;
            (connection, reply)
        })
        .await
    }
}

impl<E: Engine> ExclusiveDoor for SqlStore<E> {
    async fn send_claim(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        self.run(Operation::Claim, |mut connection| async move {
            let (requests, at) = (&self.requests, initial_position);
            let reply = requests
                .claim(
                    &mut connection,
                    group,
                    subscription,
                    partition,
                    fingerprint,
                    at,
                )
                .await;
            (connection, reply)
        })
        .await
    }

    async fn send_advance(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        self.run(Operation::Advance, |mut connection| async move {
            let requests = &self.requests;
            let reply = requests
                .advance(&mut connection, group, subscription, partition, from, to)
                .await;
            (connection, reply)
        })
        .await
    }
}
