//! [`LeaseStore`] of a [`Layered`] store, each call through its layer.

use std::time::Duration;

use async_trait::async_trait;

use super::{Around, Call, Layered};
use crate::{Acquired, Error, HeldLease, LeaseStore, LeaseTable, Released};

#[async_trait]
impl<S: LeaseStore, A: Around> LeaseStore for Layered<S, A> {
    async fn acquire(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        let call = Call::Acquire {
            group,
            subscription,
            owner,
            partitions,
            duration,
        };
        let request = self
            .inner
            .acquire(group, subscription, owner, partitions, duration);
        self.around.around(call, request).await
    }

    async fn renew(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let call = Call::Renew {
            group,
            subscription,
            owner,
            duration,
        };
        let request = self.inner.renew(group, subscription, owner, duration);
        self.around.around(call, request).await
    }

    async fn release(
        &self,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        let call = Call::Release {
            group,
            subscription,
            owner,
            partitions,
        };
        let request = self.inner.release(group, subscription, owner, partitions);
        self.around.around(call, request).await
    }

    async fn leave(&self, group: &str, subscription: &str, owner: &str) -> Result<Vec<u32>, Error> {
        let call = Call::Leave {
            group,
            subscription,
            owner,
        };
        let request = self.inner.leave(group, subscription, owner);
        self.around.around(call, request).await
    }

    async fn leases(&self, group: &str, subscription: &str) -> Result<LeaseTable, Error> {
        let call = Call::Leases {
            group,
            subscription,
        };
        let request = self.inner.leases(group, subscription);
        self.around.around(call, request).await
    }

    async fn request_handover(
        &self,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        let call = Call::RequestHandover {
            group,
            subscription,
            requester,
            partitions,
        };
        let request = self
            .inner
            .request_handover(group, subscription, requester, partitions);
        self.around.around(call, request).await
    }
}
