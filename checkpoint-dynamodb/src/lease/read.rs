//! A subscription's leases and heartbeats as one read found them, and what they say: who holds
//! each lease live, and which leases an owner holds.

use std::collections::BTreeMap;

use checkpoint_core::lease::HeldLease;

use crate::clock::Owners;
use crate::layout::LeaseItem;

/// A subscription's leases and heartbeats as one consistent read found them, the heartbeats
/// judged by this instance's observations.
#[derive(Debug, Default)]
pub(crate) struct Read {
    pub(crate) leases: BTreeMap<u32, LeaseItem>,
    pub(crate) owners: Owners,
}

impl Read {
    /// The holder of `lease` and its generation, if it is held live: granted under the
    /// generation its owner's heartbeat still has, the heartbeat not ended, and not seen
    /// unchanged by this instance for its duration.
    pub(crate) fn live_holder<'a>(&self, lease: &'a LeaseItem) -> Option<(&'a str, u64)> {
        let (owner, generation) = lease.owner.as_ref()?;
        let (heartbeat, _) = self.owners.heartbeats.get(owner)?;
        (heartbeat.generation == *generation && self.owners.is_live(owner))
            .then_some((owner.as_str(), *generation))
    }

    /// The leases `owner` holds in `generation`, sorted by partition.
    pub(crate) fn held_by(&self, owner: &str, generation: u64) -> Vec<HeldLease> {
        self.leases
            .values()
            .filter(|lease| {
                lease
                    .owner
                    .as_ref()
                    .is_some_and(|(holder, g)| holder == owner && *g == generation)
            })
            .map(|lease| HeldLease {
                partition: lease.partition,
                epoch: lease.epoch,
                handover_requested_by: lease.handover_requested_by.clone(),
            })
            .collect()
    }
}
