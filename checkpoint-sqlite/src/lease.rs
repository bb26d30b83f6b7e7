//! [`LeaseStore`](checkpoint_core::LeaseStore) on SQLite: partition leases in
//! `<table>_leases` and owners' heartbeats in `<table>_lease_owners` (see the crate doc,
//! "Leases"). The door's requests; the front is core's.
//!
//! Each operation is one transaction (`requests/lease.rs`), its expiries judged by SQLite's
//! clock read once inside it: the host's one clock, whatever process calls.

use std::time::Duration;

use checkpoint_core::door::{Checked, LeaseDoor};
use checkpoint_core::lease::{Acquired, HeldLease, LeaseTable, Released};
use checkpoint_core::{Error, Operation};

use crate::requests::LeaseKey;
use crate::store::SqliteCheckpointStore;
use checkpoint_sql::lease::duration_ms;

fn key<'a>(group: &'a str, subscription: &'a str, owner: &'a str) -> LeaseKey<'a> {
    LeaseKey {
        group,
        subscription,
        owner,
    }
}

impl LeaseDoor for SqliteCheckpointStore {
    async fn acquire(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        let mut connection = self.connection(Operation::Acquire).await?;
        let key = key(group, subscription, owner);
        self.requests
            .acquire(&mut connection, key, partitions, duration_ms(duration))
            .await
    }

    async fn renew(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let mut connection = self.connection(Operation::Renew).await?;
        let key = key(group, subscription, owner);
        self.requests
            .renew(&mut connection, key, duration_ms(duration))
            .await
    }

    async fn release(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        let mut connection = self.connection(Operation::Release).await?;
        let key = key(group, subscription, owner);
        self.requests
            .release(&mut connection, key, partitions)
            .await
    }

    async fn leave(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
    ) -> Result<Vec<u32>, Error> {
        let mut connection = self.connection(Operation::Leave).await?;
        let key = key(group, subscription, owner);
        self.requests.leave(&mut connection, key).await
    }

    async fn leases(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        let mut connection = self.connection(Operation::Leases).await?;
        self.requests
            .leases(&mut connection, group, subscription)
            .await
    }

    async fn request_handover(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        let mut connection = self.connection(Operation::RequestHandover).await?;
        let key = key(group, subscription, requester);
        self.requests
            .request_handover(&mut connection, key, partitions)
            .await
    }
}
