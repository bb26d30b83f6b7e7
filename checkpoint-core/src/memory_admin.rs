//! The operations API of the in-memory reference store.

use crate::door::{AdminDoor, Checked};
use crate::memory::Entry;
use crate::{Error, InMemoryCheckpointStore};

impl AdminDoor for InMemoryCheckpointStore {
    async fn send_groups(&self, _checked: Checked) -> Result<Vec<String>, Error> {
        let state = self.state();
        let mut groups: Vec<String> = state
            .groups
            .iter()
            .filter(|(_, entries)| !entries.is_empty())
            .map(|(group, _)| group.clone())
            .chain(
                state
                    .retired
                    .iter()
                    .filter(|(_, retired)| !retired.is_empty())
                    .map(|(group, _)| group.clone()),
            )
            .collect();
        groups.sort_unstable();
        groups.dedup();
        Ok(groups)
    }

    async fn send_start_at(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        let mut state = self.state();
        if state.is_retired(group, subscription) {
            return Err(Error::retired(group, subscription));
        }
        let entries = state.groups.entry(group.to_owned()).or_default();
        if entries.keys().any(|(name, _)| name == subscription) {
            return Err(Error::exists(group, subscription));
        }
        for &(partition, position) in positions {
            entries.insert(
                (subscription.to_owned(), partition),
                Entry {
                    position,
                    fingerprint: None,
                },
            );
        }
        Ok(())
    }

    async fn send_retire(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let mut state = self.state();
        if let Some(entries) = state.groups.get_mut(group) {
            entries.retain(|(name, _), _| name != subscription);
        }
        state
            .retired
            .entry(group.to_owned())
            .or_default()
            .insert(subscription.to_owned());
        Ok(())
    }

    async fn send_retired(&self, _checked: Checked, group: &str) -> Result<Vec<String>, Error> {
        let state = self.state();
        Ok(state
            .retired
            .get(group)
            .map(|retired| retired.iter().cloned().collect())
            .unwrap_or_default())
    }

    async fn send_purge(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<(), Error> {
        let mut state = self.state();
        if state.is_retired(group, subscription) {
            if let Some(retired) = state.retired.get_mut(group) {
                retired.remove(subscription);
            }
            state
                .leases
                .remove(&(group.to_owned(), subscription.to_owned()));
            return Ok(());
        }
        let live = state
            .groups
            .get(group)
            .is_some_and(|entries| entries.keys().any(|(name, _)| name == subscription));
        if live {
            return Err(Error::not_retired(group, subscription));
        }
        Ok(())
    }
}
