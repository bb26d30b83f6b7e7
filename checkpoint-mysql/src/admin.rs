//! [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin) on MySQL and MariaDB: the operations
//! API, over the tombstone table `<table>_retired` (see the crate doc, "Retired
//! subscriptions"). The door's requests; the front is core's.
//!
//! `groups` and `retired` are one `SELECT`. `start_at`, `retire` and `purge` each run in one
//! transaction of locking reads and writes (`requests/admin.rs`), run again when InnoDB picks
//! it as a deadlock's victim.

use checkpoint_core::door::{AdminDoor, Checked};
use checkpoint_core::{Error, Operation};

use crate::requests::again_after_deadlock;
use crate::store::MysqlCheckpointStore;

impl AdminDoor for MysqlCheckpointStore {
    async fn groups(&self, _checked: Checked) -> Result<Vec<String>, Error> {
        let mut connection = self.connection(Operation::Groups).await?;
        self.requests.groups(&mut connection).await
    }

    async fn start_at(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        let mut connection = self.connection(Operation::StartAt).await?;
        again_after_deadlock!(
            self.requests
                .start_at(&mut connection, group, subscription, positions)
                .await
        )
    }

    async fn retire(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let mut connection = self.connection(Operation::Retire).await?;
        again_after_deadlock!(
            self.requests
                .retire(&mut connection, group, subscription)
                .await
        )
    }

    async fn retired(&self, _checked: Checked, group: &str) -> Result<Vec<String>, Error> {
        let mut connection = self.connection(Operation::Retired).await?;
        self.requests.retired(&mut connection, group).await
    }

    async fn purge(&self, _checked: Checked, group: &str, subscription: &str) -> Result<(), Error> {
        let mut connection = self.connection(Operation::Purge).await?;
        again_after_deadlock!(
            self.requests
                .purge(&mut connection, group, subscription)
                .await
        )
    }
}
