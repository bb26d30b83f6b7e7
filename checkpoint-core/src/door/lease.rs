//! The door and the front of [`LeaseStore`](crate::LeaseStore).

use std::future::Future;
use std::time::Duration;

use super::{Checked, Door, call, span, uncounted};
use crate::error::{Error, Operation};
use crate::lease::{Acquired, HeldLease, LeaseTable, Released};
use crate::validation::{
    validate_acquire, validate_key, validate_lease_owner, validate_release, validate_renew,
    validate_request_handover,
};

/// A backend's requests for [`LeaseStore`](crate::LeaseStore), its expiries judged by the
/// server's clock.
pub trait LeaseDoor: Door {
    /// Grants `owner` the free, expired or own `partitions` and renews all it holds.
    fn send_acquire(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
        duration: Duration,
    ) -> impl Future<Output = Result<Acquired, Error>> + Send;

    /// Renews every lease `owner` holds.
    fn send_renew(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        duration: Duration,
    ) -> impl Future<Output = Result<Vec<HeldLease>, Error>> + Send;

    /// Releases the `partitions` `owner` holds live.
    fn send_release(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
        partitions: &[u32],
    ) -> impl Future<Output = Result<Released, Error>> + Send;

    /// Releases every lease of `owner` and ends its heartbeat.
    fn send_leave(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        owner: &str,
    ) -> impl Future<Output = Result<Vec<u32>, Error>> + Send;

    /// The live leases and owners.
    fn send_leases(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
    ) -> impl Future<Output = Result<LeaseTable, Error>> + Send;

    /// Marks the live leases of `partitions` as asked for by `requester`.
    fn send_request_handover(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        requester: &str,
        partitions: &[u32],
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// [`LeaseStore::acquire`](crate::LeaseStore::acquire) through `door`.
pub async fn acquire<D: LeaseDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    owner: &str,
    partitions: &[u32],
    duration: Duration,
) -> Result<Acquired, Error> {
    validate_acquire(group, subscription, owner, partitions, duration)?;
    let span = span!(
        "checkpoint.acquire",
        door,
        group = group,
        subscription = subscription,
        partitions = partitions.len()
    );
    let request = door.send_acquire(
        Checked::new(),
        group,
        subscription,
        owner,
        partitions,
        duration,
    );
    let count = |acquired: &Acquired| Some(acquired.granted.len());
    call(door, Operation::Acquire, span, request, count).await
}

/// [`LeaseStore::renew`](crate::LeaseStore::renew) through `door`.
pub async fn renew<D: LeaseDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    owner: &str,
    duration: Duration,
) -> Result<Vec<HeldLease>, Error> {
    validate_renew(group, subscription, owner, duration)?;
    let span = span!(
        "checkpoint.renew",
        door,
        group = group,
        subscription = subscription
    );
    let request = door.send_renew(Checked::new(), group, subscription, owner, duration);
    call(door, Operation::Renew, span, request, |held| {
        Some(held.len())
    })
    .await
}

/// [`LeaseStore::release`](crate::LeaseStore::release) through `door`.
pub async fn release<D: LeaseDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    owner: &str,
    partitions: &[u32],
) -> Result<Released, Error> {
    validate_release(group, subscription, owner, partitions)?;
    let span = span!(
        "checkpoint.release",
        door,
        group = group,
        subscription = subscription,
        partitions = partitions.len()
    );
    let request = door.send_release(Checked::new(), group, subscription, owner, partitions);
    let count = |released: &Released| Some(released.released.len());
    call(door, Operation::Release, span, request, count).await
}

/// [`LeaseStore::leave`](crate::LeaseStore::leave) through `door`.
pub async fn leave<D: LeaseDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    owner: &str,
) -> Result<Vec<u32>, Error> {
    validate_lease_owner(group, subscription, owner)?;
    let span = span!(
        "checkpoint.leave",
        door,
        group = group,
        subscription = subscription
    );
    let request = door.send_leave(Checked::new(), group, subscription, owner);
    call(door, Operation::Leave, span, request, |left| {
        Some(left.len())
    })
    .await
}

/// [`LeaseStore::leases`](crate::LeaseStore::leases) through `door`.
pub async fn leases<D: LeaseDoor>(
    door: &D,
    group: &str,
    subscription: &str,
) -> Result<LeaseTable, Error> {
    validate_key(group, subscription)?;
    let span = span!(
        "checkpoint.leases",
        door,
        group = group,
        subscription = subscription
    );
    let request = door.send_leases(Checked::new(), group, subscription);
    let count = |table: &LeaseTable| Some(table.leases.len());
    call(door, Operation::Leases, span, request, count).await
}

/// [`LeaseStore::request_handover`](crate::LeaseStore::request_handover) through `door`.
pub async fn request_handover<D: LeaseDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    requester: &str,
    partitions: &[u32],
) -> Result<(), Error> {
    validate_request_handover(group, subscription, requester, partitions)?;
    let span = span!(
        "checkpoint.request_handover",
        door,
        group = group,
        subscription = subscription,
        partitions = partitions.len()
    );
    let request =
        door.send_request_handover(Checked::new(), group, subscription, requester, partitions);
    call(door, Operation::RequestHandover, span, request, uncounted).await
}
