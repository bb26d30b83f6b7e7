//! The checkpoints' traits of a [`Layered`] store: [`CheckpointStore`],
//! [`ExclusiveCheckpointStore`] and [`TransactionalStore`], each call through its layer.

use async_trait::async_trait;

use super::{Around, Call, Layered};
use crate::transactional::TransactionalStore;
use crate::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};

#[async_trait]
impl<S: CheckpointStore, A: Around> CheckpointStore for Layered<S, A> {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        let call = Call::List { group };
        self.around.around(call, self.inner.list(group)).await
    }

    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        let call = Call::Load {
            group,
            subscription,
            partition,
        };
        let request = self.inner.load(group, subscription, partition);
        self.around.around(call, request).await
    }

    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        let call = Call::Save {
            group,
            subscription,
            partition,
            position,
        };
        let request = self.inner.save(group, subscription, partition, position);
        self.around.around(call, request).await
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        let call = Call::SaveAll { group, checkpoints };
        let request = self.inner.save_all(group, checkpoints);
        self.around.around(call, request).await
    }
}

#[async_trait]
impl<S: ExclusiveCheckpointStore, A: Around> ExclusiveCheckpointStore for Layered<S, A> {
    async fn claim(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        let call = Call::Claim {
            group,
            subscription,
            partition,
            fingerprint,
            initial_position,
        };
        let request = self.inner.claim(
            group,
            subscription,
            partition,
            fingerprint,
            initial_position,
        );
        self.around.around(call, request).await
    }

    async fn advance(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let call = Call::Advance {
            group,
            subscription,
            partition,
            from,
            to,
        };
        let request = self.inner.advance(group, subscription, partition, from, to);
        self.around.around(call, request).await
    }
}

#[async_trait]
impl<S: TransactionalStore, A: Around> TransactionalStore for Layered<S, A> {
    type Transaction = S::Transaction;

    async fn begin_transaction(&self) -> Result<Self::Transaction, Error> {
        let request = self.inner.begin_transaction();
        self.around.around(Call::Begin, request).await
    }

    async fn advance_in_transaction(
        &self,
        transaction: &mut Self::Transaction,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        let call = Call::AdvanceInTransaction {
            group,
            subscription,
            partition,
            from,
            to,
        };
        let request = self.inner.advance_in_transaction(
            transaction,
            group,
            subscription,
            partition,
            from,
            to,
        );
        self.around.around(call, request).await
    }

    async fn commit_transaction(&self, transaction: Self::Transaction) -> Result<(), Error> {
        let request = self.inner.commit_transaction(transaction);
        self.around.around(Call::Commit, request).await
    }
}
