//! Parked entries in the in-memory reference store.

use async_trait::async_trait;

use crate::parked::{ParkedEntry, ParkedStore, validate_park, validate_parked_key};
use crate::validation::validate_group;
use crate::{Error, InMemoryCheckpointStore};

#[async_trait]
impl ParkedStore for InMemoryCheckpointStore {
    async fn park(&self, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
        validate_park(group, entry)?;
        let key = (entry.subscription.clone(), entry.partition, entry.position);
        let mut entry = entry.clone();
        entry.retry_requested = false;
        self.state()
            .parked
            .entry(group.to_owned())
            .or_default()
            .insert(key, entry);
        Ok(())
    }

    async fn parked(&self, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        validate_group(group)?;
        // The map's order is (subscription, partition, position), subscriptions by bytes.
        Ok(self
            .state()
            .parked
            .get(group)
            .map(|entries| entries.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn retry_parked(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        validate_parked_key(group, subscription, position)?;
        let mut state = self.state();
        let key = (subscription.to_owned(), partition, position);
        let entry = state
            .parked
            .get_mut(group)
            .and_then(|entries| entries.get_mut(&key));
        Ok(entry.map(|entry| entry.retry_requested = true).is_some())
    }

    async fn unpark(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        validate_parked_key(group, subscription, position)?;
        let mut state = self.state();
        let key = (subscription.to_owned(), partition, position);
        let removed = state
            .parked
            .get_mut(group)
            .and_then(|entries| entries.remove(&key));
        Ok(removed.is_some())
    }
}
