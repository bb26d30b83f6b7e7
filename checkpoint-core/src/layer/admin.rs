//! The operators' traits of a [`Layered`] store: [`CheckpointAdmin`] and [`ParkedStore`], each
//! call through its layer.

use async_trait::async_trait;

use super::{Around, Call, Layered};
use crate::parked::{ParkedEntry, ParkedStore};
use crate::{CheckpointAdmin, Error};

#[async_trait]
impl<S: CheckpointAdmin, A: Around> CheckpointAdmin for Layered<S, A> {
    async fn groups(&self) -> Result<Vec<String>, Error> {
        self.around.around(Call::Groups, self.inner.groups()).await
    }

    async fn start_at(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        let call = Call::StartAt {
            group,
            subscription,
            positions,
        };
        let request = self.inner.start_at(group, subscription, positions);
        self.around.around(call, request).await
    }

    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
        let call = Call::Retire {
            group,
            subscription,
        };
        let request = self.inner.retire(group, subscription);
        self.around.around(call, request).await
    }

    async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
        let call = Call::Retired { group };
        self.around.around(call, self.inner.retired(group)).await
    }

    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        let call = Call::Purge {
            group,
            subscription,
        };
        let request = self.inner.purge(group, subscription);
        self.around.around(call, request).await
    }
}

#[async_trait]
impl<S: ParkedStore, A: Around> ParkedStore for Layered<S, A> {
    async fn park(&self, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
        let call = Call::Park { group, entry };
        self.around
            .around(call, self.inner.park(group, entry))
            .await
    }

    async fn parked(&self, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        let call = Call::Parked { group };
        self.around.around(call, self.inner.parked(group)).await
    }

    async fn retry_parked(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let call = Call::RetryParked {
            group,
            subscription,
            partition,
            position,
        };
        let request = self
            .inner
            .retry_parked(group, subscription, partition, position);
        self.around.around(call, request).await
    }

    async fn unpark(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let call = Call::Unpark {
            group,
            subscription,
            partition,
            position,
        };
        let request = self.inner.unpark(group, subscription, partition, position);
        self.around.around(call, request).await
    }
}
