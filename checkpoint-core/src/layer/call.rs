//! [`Call`]: what a layer is told of the call it runs around.

use std::time::Duration;

use crate::parked::ParkedEntry;
use crate::{Checkpoint, Fingerprint, Operation};

/// One call of a contract trait on a [`Layered`](super::Layered) store, with its arguments:
/// what an [`Around`](super::Around) decides by (time it per [`operation`](Self::operation),
/// fail it on one [`partition`](Self::partition), slow the writes down, record what was
/// saved).
///
/// A variant per method, named after it, its fields the method's arguments under their own
/// names. [`AdvanceInTransaction`](Self::AdvanceInTransaction) is the one variant whose
/// [`Operation`] is another's ([`Operation::Advance`]): match on the variant to tell it apart.
/// New methods of the contract add variants, so a `match` needs a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
#[allow(missing_docs)] // each field is the argument of the same name of the method named
pub enum Call<'a> {
    /// [`CheckpointStore::list`](crate::CheckpointStore::list).
    List { group: &'a str },
    /// [`CheckpointStore::load`](crate::CheckpointStore::load).
    Load {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
    },
    /// [`CheckpointStore::save`](crate::CheckpointStore::save).
    Save {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        position: u64,
    },
    /// [`CheckpointStore::save_all`](crate::CheckpointStore::save_all).
    SaveAll {
        group: &'a str,
        checkpoints: &'a [Checkpoint],
    },
    /// [`ExclusiveCheckpointStore::claim`](crate::ExclusiveCheckpointStore::claim).
    Claim {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    },
    /// [`ExclusiveCheckpointStore::advance`](crate::ExclusiveCheckpointStore::advance).
    Advance {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        from: u64,
        to: u64,
    },
    /// [`CheckpointAdmin::groups`](crate::CheckpointAdmin::groups).
    Groups,
    /// [`CheckpointAdmin::start_at`](crate::CheckpointAdmin::start_at).
    StartAt {
        group: &'a str,
        subscription: &'a str,
        positions: &'a [(u32, u64)],
    },
    /// [`CheckpointAdmin::retire`](crate::CheckpointAdmin::retire).
    Retire {
        group: &'a str,
        subscription: &'a str,
    },
    /// [`CheckpointAdmin::retired`](crate::CheckpointAdmin::retired).
    Retired { group: &'a str },
    /// [`CheckpointAdmin::purge`](crate::CheckpointAdmin::purge).
    Purge {
        group: &'a str,
        subscription: &'a str,
    },
    /// [`LeaseStore::acquire`](crate::LeaseStore::acquire) (an empty `partitions` is a join).
    Acquire {
        group: &'a str,
        subscription: &'a str,
        owner: &'a str,
        partitions: &'a [u32],
        duration: Duration,
    },
    /// [`LeaseStore::renew`](crate::LeaseStore::renew).
    Renew {
        group: &'a str,
        subscription: &'a str,
        owner: &'a str,
        duration: Duration,
    },
    /// [`LeaseStore::release`](crate::LeaseStore::release).
    Release {
        group: &'a str,
        subscription: &'a str,
        owner: &'a str,
        partitions: &'a [u32],
    },
    /// [`LeaseStore::leave`](crate::LeaseStore::leave).
    Leave {
        group: &'a str,
        subscription: &'a str,
        owner: &'a str,
    },
    /// [`LeaseStore::leases`](crate::LeaseStore::leases).
    Leases {
        group: &'a str,
        subscription: &'a str,
    },
    /// [`LeaseStore::request_handover`](crate::LeaseStore::request_handover).
    RequestHandover {
        group: &'a str,
        subscription: &'a str,
        requester: &'a str,
        partitions: &'a [u32],
    },
    /// [`ParkedStore::park`](crate::parked::ParkedStore::park).
    Park {
        group: &'a str,
        entry: &'a ParkedEntry,
    },
    /// [`ParkedStore::parked`](crate::parked::ParkedStore::parked).
    Parked { group: &'a str },
    /// [`ParkedStore::retry_parked`](crate::parked::ParkedStore::retry_parked).
    RetryParked {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        position: u64,
    },
    /// [`ParkedStore::unpark`](crate::parked::ParkedStore::unpark).
    Unpark {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        position: u64,
    },
    /// [`TransactionalStore::begin_transaction`](crate::transactional::TransactionalStore::begin_transaction).
    Begin,
    /// [`TransactionalStore::advance_in_transaction`](crate::transactional::TransactionalStore::advance_in_transaction).
    AdvanceInTransaction {
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        from: u64,
        to: u64,
    },
    /// [`TransactionalStore::commit_transaction`](crate::transactional::TransactionalStore::commit_transaction).
    Commit,
}

impl<'a> Call<'a> {
    /// The operation, as errors and spans name it.
    pub fn operation(&self) -> Operation {
        match self {
            Call::List { .. } => Operation::List,
            Call::Load { .. } => Operation::Load,
            Call::Save { .. } => Operation::Save,
            Call::SaveAll { .. } => Operation::SaveAll,
            Call::Claim { .. } => Operation::Claim,
            Call::Advance { .. } | Call::AdvanceInTransaction { .. } => Operation::Advance,
            Call::Groups => Operation::Groups,
            Call::StartAt { .. } => Operation::StartAt,
            Call::Retire { .. } => Operation::Retire,
            Call::Retired { .. } => Operation::Retired,
            Call::Purge { .. } => Operation::Purge,
            Call::Acquire { .. } => Operation::Acquire,
            Call::Renew { .. } => Operation::Renew,
            Call::Release { .. } => Operation::Release,
            Call::Leave { .. } => Operation::Leave,
            Call::Leases { .. } => Operation::Leases,
            Call::RequestHandover { .. } => Operation::RequestHandover,
            Call::Park { .. } => Operation::Park,
            Call::Parked { .. } => Operation::Parked,
            Call::RetryParked { .. } => Operation::RetryParked,
            Call::Unpark { .. } => Operation::Unpark,
            Call::Begin => Operation::Begin,
            Call::Commit => Operation::Commit,
        }
    }

    /// The group the call names: every call but `groups`, `begin` and `commit` names one.
    pub fn group(&self) -> Option<&'a str> {
        match *self {
            Call::Groups | Call::Begin | Call::Commit => None,
            Call::List { group }
            | Call::SaveAll { group, .. }
            | Call::Retired { group }
            | Call::Park { group, .. }
            | Call::Parked { group } => Some(group),
            Call::Load { group, .. }
            | Call::Save { group, .. }
            | Call::Claim { group, .. }
            | Call::Advance { group, .. }
            | Call::StartAt { group, .. }
            | Call::Retire { group, .. }
            | Call::Purge { group, .. }
            | Call::Acquire { group, .. }
            | Call::Renew { group, .. }
            | Call::Release { group, .. }
            | Call::Leave { group, .. }
            | Call::Leases { group, .. }
            | Call::RequestHandover { group, .. }
            | Call::RetryParked { group, .. }
            | Call::Unpark { group, .. }
            | Call::AdvanceInTransaction { group, .. } => Some(group),
        }
    }

    /// The one subscription the call names (a parked entry's for `park`); `None` for the
    /// calls on a whole group (`list`, `save_all`, `retired`, `parked`) or on none.
    pub fn subscription(&self) -> Option<&'a str> {
        match *self {
            Call::Park { entry, .. } => Some(&entry.subscription),
            Call::Load { subscription, .. }
            | Call::Save { subscription, .. }
            | Call::Claim { subscription, .. }
            | Call::Advance { subscription, .. }
            | Call::StartAt { subscription, .. }
            | Call::Retire { subscription, .. }
            | Call::Purge { subscription, .. }
            | Call::Acquire { subscription, .. }
            | Call::Renew { subscription, .. }
            | Call::Release { subscription, .. }
            | Call::Leave { subscription, .. }
            | Call::Leases { subscription, .. }
            | Call::RequestHandover { subscription, .. }
            | Call::RetryParked { subscription, .. }
            | Call::Unpark { subscription, .. }
            | Call::AdvanceInTransaction { subscription, .. } => Some(subscription),
            _ => None,
        }
    }

    /// The one partition the call names (a parked entry's for `park`); the lease calls name
    /// several ([`partitions`](Self::partitions)), `save_all` one per checkpoint.
    pub fn partition(&self) -> Option<u32> {
        match *self {
            Call::Park { entry, .. } => Some(entry.partition),
            Call::Load { partition, .. }
            | Call::Save { partition, .. }
            | Call::Claim { partition, .. }
            | Call::Advance { partition, .. }
            | Call::RetryParked { partition, .. }
            | Call::Unpark { partition, .. }
            | Call::AdvanceInTransaction { partition, .. } => Some(partition),
            _ => None,
        }
    }

    /// The partitions an `acquire`, a `release` or a `request_handover` names; none for
    /// every other call.
    pub fn partitions(&self) -> &'a [u32] {
        match *self {
            Call::Acquire { partitions, .. }
            | Call::Release { partitions, .. }
            | Call::RequestHandover { partitions, .. } => partitions,
            _ => &[],
        }
    }
}
