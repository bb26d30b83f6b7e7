//! [`LeaseStore`] on PostgreSQL: partition leases in `<table>_leases` and owners' heartbeats in
//! `<table>_owners`, one statement per operation, expiry judged by the server's clock (see
//! the crate doc, "Leases").

use std::time::Duration;

use checkpoint_core::door::{Checked, LeaseDoor};
use checkpoint_core::{Acquired, Error, HeldLease, LeaseTable, Operation, Released};

use crate::store::PostgresCheckpointStore;

impl LeaseDoor for PostgresCheckpointStore {
    /// One statement (`sql/acquire.sql`), run again after a short pause while it refused a
    /// partition only because the expired holder's heartbeat was locked (see the crate doc,
    /// "Leases"). Idempotent (a second attempt finds the leases held and keeps their epochs),
    /// so also run once more on a lost connection.
    async fn acquire(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        self.on_pool(Operation::Acquire)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .acquire(
                        &mut connection,
                        (group, subscription, owner),
                        partitions,
                        duration,
                        self.timeout,
                    )
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/renew.sql`), whatever the number of leases; run once more on a
    /// lost connection.
    async fn renew(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        self.on_pool(Operation::Renew)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .renew(&mut connection, (group, subscription, owner), duration)
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/release.sql`). Not run a second time on a lost connection: had the
    /// first attempt committed, the second would report the released partitions as not held.
    async fn release(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        self.on_pool(Operation::Release)
            .run(|mut connection| async move {
                let reply = self
                    .requests
                    .release(&mut connection, (group, subscription, owner), partitions)
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/leave.sql`). Not run a second time on a lost connection, as
    /// [`release`](Self::release).
    async fn leave(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
    ) -> Result<Vec<u32>, Error> {
        self.on_pool(Operation::Leave)
            .run(|mut connection| async move {
                let reply = self
                    .requests
                    .leave(&mut connection, (group, subscription, owner))
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/leases.sql`); run once more on a lost connection.
    async fn leases(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        self.on_pool(Operation::Leases)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .leases(&mut connection, group, subscription)
                    .await;
                (connection, reply)
            })
            .await
    }

    /// One statement (`sql/request_handover.sql`); idempotent, so run once more on a lost
    /// connection.
    async fn request_handover(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        self.on_pool(Operation::RequestHandover)
            .run_once_more_if_lost(|mut connection| async move {
                let reply = self
                    .requests
                    .request_handover(
                        &mut connection,
                        (group, subscription, requester),
                        partitions,
                    )
                    .await;
                (connection, reply)
            })
            .await
    }
}
