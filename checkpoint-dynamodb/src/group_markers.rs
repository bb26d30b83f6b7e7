//! What the store instance knows of the groups' markers (the crate documentation, "Groups"):
//! the groups whose marker it has written, so that a checkpoint's first write, a `start_at` or
//! a `retire` in such a group sends no marker again.
//!
//! The store never deletes a marker, so once written it stays: the knowledge never goes stale.
//! Shared by the store's clones. One lock per group is held across the marker's `PutItem`, so
//! that of the concurrent first writes of a group (a `save_all` of new keys) exactly one sends
//! it and the others wait for it; the map's own lock is never held across a request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// How many groups an instance remembers; past this the memory starts again (a marker is then
/// written again by the next first write of a forgotten group: one request more, nothing else).
const MAX_REMEMBERED_GROUPS: usize = 10_000;

/// Whether a group's marker is written, behind the lock that its writer holds.
pub(crate) type MarkerState = Arc<futures_util::lock::Mutex<bool>>;

/// The groups whose marker this instance has written (or is writing).
#[derive(Debug, Default)]
pub(crate) struct GroupMarkers {
    groups: Mutex<HashMap<String, MarkerState>>,
}

impl GroupMarkers {
    /// The state of `group`'s marker: lock it, and write the marker unless it says written.
    pub(crate) fn state(&self, group: &str) -> MarkerState {
        let mut groups = self.groups.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(state) = groups.get(group) {
            return state.clone();
        }
        if groups.len() >= MAX_REMEMBERED_GROUPS {
            groups.clear();
        }
        let state = MarkerState::default();
        groups.insert(group.to_owned(), state.clone());
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_state_per_group_and_a_bounded_memory() {
        let markers = GroupMarkers::default();
        assert!(Arc::ptr_eq(&markers.state("a"), &markers.state("a")));
        assert!(!Arc::ptr_eq(&markers.state("a"), &markers.state("b")));
        for i in 0..=MAX_REMEMBERED_GROUPS {
            markers.state(&i.to_string());
        }
        assert!(markers.groups.lock().unwrap().len() <= MAX_REMEMBERED_GROUPS);
    }
}
