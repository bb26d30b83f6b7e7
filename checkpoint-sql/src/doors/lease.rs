//! [`LeaseDoor`] of [`SqlStore`].

use std::time::Duration;

use checkpoint_core::door::{Checked, LeaseDoor};
use checkpoint_core::{Acquired, Error, HeldLease, LeaseTable, Operation, Released};

use crate::engine::Engine;
use crate::lease::LeaseKey;
use crate::requests::Leases;
use crate::store::SqlStore;

impl<E: Engine> LeaseDoor for SqlStore<E> {
    async fn send_acquire(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        let key = LeaseKey::new(group, subscription, owner);
        self.run(Operation::Acquire, |mut connection| async move {
            let requests = &self.requests;
            let reply = requests
                .acquire(&mut connection, key, partitions, duration, self.timeout)
                .await;
            (connection, reply)
        })
        .await
    }

    async fn send_renew(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let key = LeaseKey::new(group, subscription, owner);
        self.run(Operation::Renew, |mut connection| async move {
            let reply = self.requests.renew(&mut connection, key, duration).await;
            (connection, reply)
        })
        .await
    }

    async fn send_release(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        let key = LeaseKey::new(group, subscription, owner);
        self.run(Operation::Release, |mut connection| async move {
            let reply = self
                .requests
                .release(&mut connection, key, partitions)
                .await;
            (connection, reply)
        })
        .await
    }

    async fn send_leave(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
    ) -> Result<Vec<u32>, Error> {
        let key = LeaseKey::new(group, subscription, owner);
        self.run(Operation::Leave, |mut connection| async move {
            let reply = self.requests.leave(&mut connection, key).await;
            (connection, reply)
        })
        .await
    }

    async fn send_leases(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        self.run(Operation::Leases, |mut connection| async move {
            let reply = self
                .requests
                .leases(&mut connection, group, subscription)
                .await;
            (connection, reply)
        })
        .await
    }

    async fn send_request_handover(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        let key = LeaseKey::new(group, subscription, requester);
        self.run(Operation::RequestHandover, |mut connection| async move {
            let requests = &self.requests;
            let reply = requests
                .request_handover(&mut connection, key, partitions)
                .await;
            (connection, reply)
        })
        .await
    }
}
