//! Parked entries in the in-memory reference store.

use crate::door::{Checked, ParkedDoor};
use crate::parked::ParkedEntry;
use crate::{Error, InMemoryCheckpointStore};

impl ParkedDoor for InMemoryCheckpointStore {
    async fn send_park(
        &self,
        _checked: Checked,
        group: &str,
        entry: &ParkedEntry,
    ) -> Result<(), Error> {
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

    async fn send_parked(&self, _checked: Checked, group: &str) -> Result<Vec<ParkedEntry>, Error> {
        // The map's order is (subscription, partition, position), subscriptions by bytes.
        Ok(self
            .state()
            .parked
            .get(group)
            .map(|entries| entries.values().cloned().collect())
            .unwrap_or_default())
    }

    async fn send_retry_parked(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let mut state = self.state();
        let key = (subscription.to_owned(), partition, position);
        let entry = state
            .parked
            .get_mut(group)
            .and_then(|entries| entries.get_mut(&key));
        Ok(entry.map(|entry| entry.retry_requested = true).is_some())
    }

    async fn send_unpark(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error> {
        let mut state = self.state();
        let key = (subscription.to_owned(), partition, position);
        let removed = state
            .parked
            .get_mut(group)
            .and_then(|entries| entries.remove(&key));
        Ok(removed.is_some())
    }
}
