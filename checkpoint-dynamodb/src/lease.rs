//! The [`LeaseStore`] impl: each method validates, opens its span, and sends its requests
//! through [`requests::lease`](crate::requests::lease), each within the store's timeout.
//!
//! DynamoDB has no clock: a lease is held while its owner's heartbeat has the generation it was
//! granted under, and the instance's [`LeaseClock`](crate::clock::LeaseClock) judges expiry (its
//! own deadlines, and how long it has seen another owner's heartbeat unchanged). The crate
//! documentation, "Leases", gives the layout, the requests and why it is safe.

mod plan;
mod read;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use checkpoint_core::door::{Checked, LeaseDoor};
use checkpoint_core::lease::{Acquired, HeldLease, Lease, LeaseOwner, LeaseTable, Released};
use checkpoint_core::{Error, Operation};
use futures_util::future::{try_join, try_join3};

use crate::DynamoDbCheckpointStore;
use crate::layout::LeasePartitionItem;
use crate::requests::lease::{self as requests, EndIf, Name};
use read::Read;

/// A lease duration in whole milliseconds, as the heartbeat keeps it (at most a day).
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

impl DynamoDbCheckpointStore {
    /// Every lease and heartbeat of the subscription: a consistent `Query`, every page, each
    /// within the store's timeout; the heartbeats recorded and judged by this instance.
    pub(crate) async fn read_leases(&self, op: Operation, name: Name<'_>) -> Result<Read, Error> {
        let (items, _pages) = self
            .every_page(op, |start| requests::leases_page(self, op, name, start))
            .await?;
        let read_at = Instant::now();
        let mut leases = BTreeMap::new();
        let mut heartbeats = Vec::new();
        for item in items {
            match item {
                LeasePartitionItem::Lease(lease) => {
                    leases.insert(lease.partition, lease);
                }
                LeasePartitionItem::Heartbeat(heartbeat) => heartbeats.push(heartbeat),
            }
        }
        let (group, subscription) = name;
        let owners = self
            .lease_clock()
            .observe(group, subscription, heartbeats, read_at);
        Ok(Read { leases, owners })
    }

    /// Whether the subscription is retired: a consistent `GetItem` of its tombstone.
    async fn is_retired(&self, op: Operation, name: Name<'_>) -> Result<bool, Error> {
        self.within(op, requests::is_retired(self, op, name)).await
    }

    /// The owner's heartbeat, beaten: one more beat of the generation this instance holds live,
    /// else (or when that generation has ended) a new generation. The generation, and whether
    /// it is the one held before (so its leases are kept).
    async fn beat_or_start(
        &self,
        name: Name<'_>,
        owner: &str,
        duration: Duration,
    ) -> Result<(u64, bool), Error> {
        let op = Operation::Acquire;
        let (group, subscription) = name;
        let clock = self.lease_clock();
        if let Some(generation) = clock.live_generation(group, subscription, owner) {
            let sent_at = Instant::now();
            let beat = requests::beat(self, op, name, owner, generation, millis(duration));
            if self.within(op, beat).await? {
                clock.hold((group, subscription, owner), generation, sent_at, duration);
                return Ok((generation, true));
            }
        }
        let sent_at = Instant::now();
        // The heartbeat's incarnation: random, and kept only if this start creates the item.
        let start = requests::start(self, name, owner, millis(duration), fastrand::u64(..));
        let generation = self.within(op, start).await?;
        clock.hold((group, subscription, owner), generation, sent_at, duration);
        Ok((generation, false))
    }
}

impl LeaseDoor for DynamoDbCheckpointStore {
    /// A consistent `GetItem` of the tombstone beside a consistent `Query` of the
    /// subscription's leases (one per page), then an `UpdateItem` of the owner's heartbeat,
    /// then one conditional write per partition to grant, and one `UpdateItem` per dead owner
    /// to take over from: see the [crate documentation](crate).
    async fn send_acquire(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> Result<Acquired, Error> {
        let op = Operation::Acquire;
        let name = (group, subscription);
        let (retired, read) =
            try_join(self.is_retired(op, name), self.read_leases(op, name)).await?;
        if retired {
            return Err(Error::retired(group, subscription));
        }
        let (generation, kept) = self.beat_or_start(name, owner, duration).await?;
        let plan = plan::Plan::new(&read, (owner, generation), kept, partitions);
        plan.carry_out(self, name).await
    }

    /// A conditional `UpdateItem` of the owner's heartbeat, a consistent `GetItem` of the
    /// tombstone and a consistent `Query` of the subscription's leases (one per page), all at
    /// once; only the `GetItem` when this instance does not hold the owner live.
    async fn send_renew(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let op = Operation::Renew;
        let name = (group, subscription);
        let clock = self.lease_clock();
        let Some(generation) = clock.live_generation(group, subscription, owner) else {
            return Err(if self.is_retired(op, name).await? {
                Error::retired(group, subscription)
            } else {
                Error::not_held(group, subscription, owner)
            });
        };
        let sent_at = Instant::now();
        let beat = requests::beat(self, op, name, owner, generation, millis(duration));
        let (beaten, retired, read) = try_join3(
            self.within(op, beat),
            self.is_retired(op, name),
            self.read_leases(op, name),
        )
        .await?;
        if retired {
            return Err(Error::retired(group, subscription));
        }
        if !beaten {
            clock.forget(group, subscription, owner);
            return Err(Error::not_held(group, subscription, owner));
        }
        clock.hold((group, subscription, owner), generation, sent_at, duration);
        Ok(read.held_by(owner, generation))
    }

    /// One conditional `UpdateItem` per partition (none when this instance does not hold the
    /// owner live: then nothing is held).
    async fn send_release(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        let name = (group, subscription);
        let clock = self.lease_clock();
        let Some(generation) = clock.live_generation(group, subscription, owner) else {
            let mut not_held = partitions.to_vec();
            not_held.sort_unstable();
            return Ok(Released {
                released: Vec::new(),
                not_held,
            });
        };
        let answers = self
            .each(
                Operation::Release,
                partitions.to_vec(),
                |partition| async move {
                    let freed =
                        requests::release(self, name, partition, (owner, generation)).await?;
                    Ok((partition, freed))
                },
            )
            .await?;
        let (mut released, mut not_held): (Vec<_>, Vec<_>) = answers
            .into_iter()
            .partition(|&(_, freed): &(u32, bool)| freed);
        released.sort_unstable();
        not_held.sort_unstable();
        Ok(Released {
            released: released
                .into_iter()
                .map(|(partition, _)| partition)
                .collect(),
            not_held: not_held
                .into_iter()
                .map(|(partition, _)| partition)
                .collect(),
        })
    }

    /// An `UpdateItem` ending the owner's heartbeat (a new generation: every lease it held is
    /// free at once) beside a consistent `Query` of the subscription's leases (one per page).
    async fn send_leave(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
    ) -> Result<Vec<u32>, Error> {
        let op = Operation::Leave;
        let name = (group, subscription);
        let clock = self.lease_clock();
        let generation = clock.live_generation(group, subscription, owner);
        let condition = generation.map_or(EndIf::Exists, EndIf::Generation);
        let end = requests::end(self, op, name, owner, condition);
        let (ended, read) = try_join(self.within(op, end), self.read_leases(op, name)).await?;
        clock.forget(group, subscription, owner);
        Ok(match generation {
            Some(generation) if ended => read
                .held_by(owner, generation)
                .into_iter()
                .map(|lease| lease.partition)
                .collect(),
            _ => Vec::new(),
        })
    }

    /// A consistent `Query` of the subscription's leases, one per page.
    async fn send_leases(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        let read = self
            .read_leases(Operation::Leases, (group, subscription))
            .await?;
        let leases = read
            .leases
            .values()
            .filter_map(|lease| {
                read.live_holder(lease).map(|(owner, _)| Lease {
                    partition: lease.partition,
                    owner: owner.to_owned(),
                    epoch: lease.epoch,
                    time_left: None,
                    handover_requested_by: lease.handover_requested_by.clone(),
                })
            })
            .collect();
        let owners = read
            .owners
            .heartbeats
            .keys()
            .filter(|owner| read.owners.is_live(owner))
            .map(|owner| LeaseOwner {
                owner: owner.clone(),
                time_left: None,
            })
            .collect();
        Ok(LeaseTable { leases, owners })
    }

    /// A consistent `Query` of the subscription's leases (one per page), then a conditional
    /// `UpdateItem` per partition named that another owner holds live.
    async fn send_request_handover(
        &self,
        _checked: Checked,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> Result<(), Error> {
        let op = Operation::RequestHandover;
        let name = (group, subscription);
        let read = self.read_leases(op, name).await?;
        let marks: Vec<(u32, (String, u64))> = partitions
            .iter()
            .filter_map(|partition| read.leases.get(partition))
            .filter_map(|lease| {
                let (holder, generation) = read.live_holder(lease)?;
                (holder != requester).then(|| (lease.partition, (holder.to_owned(), generation)))
            })
            .collect();
        self.each(op, marks, |(partition, (holder, generation))| async move {
            requests::request_handover(self, name, partition, (&holder, generation), requester)
                .await
        })
        .await
        .map(drop)
    }
}
