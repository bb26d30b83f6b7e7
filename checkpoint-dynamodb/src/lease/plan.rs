//! What an `acquire` does with each partition it names, decided from one consistent read of
//! the subscription's leases, and the writes that carry it out.

use std::collections::{BTreeMap, HashSet};

use checkpoint_core::lease::{Acquired, HeldLease};
use checkpoint_core::{Error, Operation};

use super::read::Read;
use crate::DynamoDbCheckpointStore;
use crate::layout::Heartbeat;
use crate::requests::lease::{self as requests, EndIf, Name};

const OP: Operation = Operation::Acquire;

/// What to do with one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// No item: the first grant, at epoch 1.
    New,
    /// Free (released, or its holder's generation is over): granted if still at `epoch`.
    Grant { epoch: u64 },
    /// Held by `from`, whose heartbeat this instance has seen unchanged for its duration:
    /// granted at `epoch` once that heartbeat is ended.
    Take { epoch: u64, from: String },
    /// Held live by another owner.
    Refuse,
}

/// The steps of one `acquire`.
#[derive(Debug)]
pub(super) struct Plan<'a> {
    owner: &'a str,
    generation: u64,
    /// The leases the owner holds already in its generation (when it was kept): held still.
    held: Vec<HeldLease>,
    steps: Vec<(u32, Step)>,
    /// The heartbeats to end, by owner, exactly as observed.
    takeovers: BTreeMap<String, Heartbeat>,
}

impl<'a> Plan<'a> {
    /// The plan of `owner`, now of heartbeat `generation` (`kept`: the one it held before), for
    /// `partitions`, from `read`.
    pub(super) fn new(
        read: &Read,
        (owner, generation): (&'a str, u64),
        kept: bool,
        partitions: &[u32],
    ) -> Self {
        let held = if kept {
            read.held_by(owner, generation)
        } else {
            Vec::new()
        };
        let mut plan = Plan {
            owner,
            generation,
            held,
            steps: Vec::new(),
            takeovers: BTreeMap::new(),
        };
        for &partition in partitions {
            if plan.held.iter().any(|lease| lease.partition == partition) {
                continue;
            }
            let step = plan.step(read, partition);
            plan.steps.push((partition, step));
        }
        plan
    }

    /// The step for one partition the owner does not hold already.
    fn step(&mut self, read: &Read, partition: u32) -> Step {
        let Some(lease) = read.leases.get(&partition) else {
            return Step::New;
        };
        let epoch = lease.epoch;
        let Some((holder, granted_in)) = &lease.owner else {
            return Step::Grant { epoch };
        };
        if holder == self.owner {
            // Of an earlier generation of this owner: over (its current one is held above).
            return Step::Grant { epoch };
        }
        match read.owners.heartbeats.get(holder) {
            Some((heartbeat, _)) if heartbeat.ended || heartbeat.generation > *granted_in => {
                Step::Grant { epoch }
            }
            Some((heartbeat, true)) if heartbeat.generation == *granted_in => {
                self.takeovers.insert(holder.clone(), heartbeat.clone());
                Step::Take {
                    epoch,
                    from: holder.clone(),
                }
            }
            // Live; or a heartbeat read before its owner's new generation (or not yet
            // created) while the lease was read after its grant: live too.
            _ => Step::Refuse,
        }
    }

    /// Ends the dead owners' heartbeats (one `UpdateItem` each, only if unchanged), then grants
    /// every partition it can (one conditional write each). An end refused because the
    /// heartbeat changed is looked at again (one more consistent `Query`): a new generation
    /// frees the owner's leases as surely as the end would have.
    pub(super) async fn carry_out(
        self,
        store: &DynamoDbCheckpointStore,
        name: Name<'_>,
    ) -> Result<Acquired, Error> {
        let observed: BTreeMap<String, u64> = self
            .takeovers
            .iter()
            .map(|(owner, heartbeat)| (owner.clone(), heartbeat.generation))
            .collect();
        let mut ended = end_dead_owners(store, name, self.takeovers).await?;
        ended.extend(moved_on(store, name, observed, &ended).await?);
        let mut refused = Vec::new();
        let mut writes = Vec::new();
        for (partition, step) in self.steps {
            match step {
                Step::New => writes.push((partition, None)),
                Step::Grant { epoch } => writes.push((partition, Some(epoch))),
                Step::Take { epoch, from } if ended.contains(&from) => {
                    writes.push((partition, Some(epoch)));
                }
                Step::Take { .. } | Step::Refuse => refused.push(partition),
            }
        }
        let grantee = (self.owner, self.generation);
        let answers = store
            .each(OP, writes, |(partition, epoch)| async move {
                let granted = match epoch {
                    None => requests::grant_new(store, name, partition, grantee).await?,
                    Some(epoch) => requests::grant(store, name, partition, grantee, epoch).await?,
                };
                Ok((
                    partition,
                    granted.then(|| epoch.map_or(1, |e| e.saturating_add(1))),
                ))
            })
            .await?;
        let mut granted = self.held;
        for (partition, epoch) in answers {
            match epoch {
                Some(epoch) => granted.push(HeldLease {
                    partition,
                    epoch,
                    handover_requested_by: None,
                }),
                None => refused.push(partition),
            }
        }
        granted.sort_unstable();
        refused.sort_unstable();
        Ok(Acquired { granted, refused })
    }
}

/// Of the `observed` owners (with the generation their leases to take were granted under) not
/// `ended`, those whose heartbeat has moved on since: a new generation (the owner started
/// again, acquiring; or another taker ended it) or ended. Their leases of that generation are
/// free, as if the end had succeeded: refusing them would refuse a lease nobody holds, which
/// is what an owner acquiring again at the moment of a takeover caused (the kit's
/// `an_expired_lease_goes_to_a_taker_racing_its_former_holder`). A heartbeat of the same
/// generation that only beat again is live: refused. Each grant is still conditional on the
/// lease's epoch, so a lease another taker was granted meanwhile stays refused.
async fn moved_on(
    store: &DynamoDbCheckpointStore,
    name: Name<'_>,
    mut observed: BTreeMap<String, u64>,
    ended: &HashSet<String>,
) -> Result<HashSet<String>, Error> {
    observed.retain(|owner, _| !ended.contains(owner));
    if observed.is_empty() {
        return Ok(HashSet::new());
    }
    let again = store.read_leases(OP, name).await?;
    Ok(observed
        .into_iter()
        .filter(|(owner, generation)| {
            again
                .owners
                .heartbeats
                .get(owner)
                .is_some_and(|(heartbeat, _)| heartbeat.ended || heartbeat.generation > *generation)
        })
        .map(|(owner, _)| owner)
        .collect())
}

/// Ends each heartbeat exactly as observed: the owners whose heartbeat it ended (every lease
/// they held is free from then on).
async fn end_dead_owners(
    store: &DynamoDbCheckpointStore,
    name: Name<'_>,
    takeovers: BTreeMap<String, Heartbeat>,
) -> Result<HashSet<String>, Error> {
    let ended = store
        .each(
            OP,
            takeovers.into_iter().collect(),
            |(owner, heartbeat)| async move {
                let ended =
                    requests::end(store, OP, name, &owner, EndIf::Unchanged(&heartbeat)).await?;
                if ended {
                    tracing::debug!("took over from an owner seen unchanged for its duration");
                }
                Ok(ended.then_some(owner))
            },
        )
        .await?;
    Ok(ended.into_iter().flatten().collect())
}
