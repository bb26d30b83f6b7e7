//! [`AdminDoor`] of [`SqlStore`].

use checkpoint_core::door::{AdminDoor, Checked};
use checkpoint_core::{Error, Operation};

use crate::engine::Engine;
use crate::requests::{Admin, Statements};
use crate::store::SqlStore;

impl<E: Engine> AdminDoor for SqlStore<E> {
    async fn send_groups(&self, _: Checked) -> Result<Vec<String>, Error> {
        self.run(Operation::Groups, |mut connection| async move {
            let reply = self.requests.admin().groups(&mut connection).await;
            (connection, reply)
        })
        .await
    }

    async fn send_start_at(
        &self,
        _: Checked,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        self.run(Operation::StartAt, |mut connection| async move {
            let requests = self.requests.admin();
            let reply = requests
                .start_at(&mut connection, group, subscription, positions)
                .await;
            (connection, reply)
        })
        .await
    }

    async fn send_retire(&self, _: Checked, group: &str, subscription: &str) -> Result<(), Error> {
        self.run(Operation::Retire, |mut connection| async move {
            let requests = self.requests.admin();
            let reply = requests
                .retire(&mut connection, group, subscription, self.timeout)
                .await;
            (connection, reply)
        })
        .await
    }

    async fn send_retired(&self, _: Checked, group: &str) -> Result<Vec<String>, Error> {
        self.run(Operation::Retired, |mut connection| async move {
            let reply = self.requests.admin().retired(&mut connection, group).await;
            (connection, reply)
        })
        .await
    }

    async fn send_purge(&self, _: Checked, group: &str, subscription: &str) -> Result<(), Error> {
        self.run(Operation::Purge, |mut connection| async move {
            let reply = self
                .requests
                .admin()
                .purge(&mut connection, group, subscription)
                .await;
            (connection, reply)
        })
        .await
    }
}
