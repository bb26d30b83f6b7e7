//! [`CheckpointAdmin`] on PostgreSQL: the operations API, over the tombstone table
//! `<table>_retired` (see the crate doc, "Retired subscriptions").

use checkpoint_core::door::{AdminDoor, Checked};
use checkpoint_core::{Error, Operation};

use crate::store::PostgresCheckpointStore;

impl AdminDoor for PostgresCheckpointStore {
    /// One statement: a loose index scan of the checkpoint table (one index probe per group)
    /// and the tombstone table, merged and sorted by bytes. Every group, in one reply.
    async fn groups(&self, _checked: Checked) -> Result<Vec<String>, Error> {
        self.on_pool(Operation::Groups)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self.requests.groups(&mut connection).await;
                (connection, reply)
            })
            .await
    }

    /// One transaction that creates every checkpoint or none: the name's advisory lock (see
    /// `sql/start_at_lock.sql`), then `sql/start_at.sql`. Not run a second time on a lost
    /// connection: had the first attempt committed, the second would report the caller's own
    /// checkpoints as [`Error::Exists`].
    async fn start_at(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        self.on_pool(Operation::StartAt)
            .run(|mut connection| async move {
                let reply = self
                    .requests
                    .start_at(&mut connection, group, subscription, positions)
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One transaction: `BEGIN`, bound the lock wait (when the store has a timeout), lock the
    /// table against writers, write the tombstone and delete the checkpoints, commit; five
    /// round trips, as the tests count them. Idempotent, so run once more on a lost connection.
    async fn retire(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let lock_timeout = self.timeout;
        self.on_pool(Operation::Retire)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .retire(&mut connection, group, subscription, lock_timeout)
                    .await;
                (connection, reply)
            })
            .await
    }

    async fn retired(&self, _checked: Checked, group: &str) -> Result<Vec<String>, Error> {
        self.on_pool(Operation::Retired)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self.requests.retired(&mut connection, group).await;
                (connection, reply)
            })
            .await
    }

    /// One statement (see `sql/purge.sql`).
    async fn purge(&self, _checked: Checked, group: &str, subscription: &str) -> Result<(), Error> {
        self.on_pool(Operation::Purge)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .purge(&mut connection, group, subscription)
                    .await;
                (connection, reply)
            })
            .await
    }
}
