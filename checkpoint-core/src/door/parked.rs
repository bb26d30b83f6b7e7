//! The door and the front of [`ParkedStore`](crate::parked::ParkedStore).

use std::future::Future;

use super::{Checked, Door, call, span, uncounted};
use crate::error::{Error, Operation};
use crate::parked::{ParkedEntry, validate_park, validate_parked_key};
use crate::validation::validate_group;

/// A backend's requests for [`ParkedStore`](crate::parked::ParkedStore).
pub trait ParkedDoor: Door {
    /// Records `entry`, replacing one parked at the same place.
    fn send_park(
        &self,
        checked: Checked,
        group: &str,
        entry: &ParkedEntry,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Every entry parked under `group`, sorted.
    fn send_parked(
        &self,
        checked: Checked,
        group: &str,
    ) -> impl Future<Output = Result<Vec<ParkedEntry>, Error>> + Send;

    /// Sets the entry's `retry_requested`; whether it was parked.
    fn send_retry_parked(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> impl Future<Output = Result<bool, Error>> + Send;

    /// Removes the entry; whether it was parked.
    fn send_unpark(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> impl Future<Output = Result<bool, Error>> + Send;
}

/// [`ParkedStore::park`](crate::parked::ParkedStore::park) through `door`.
pub async fn park<D: ParkedDoor>(door: &D, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
    validate_park(group, entry)?;
    let span = span!(
        "checkpoint.park",
        door,
        group = group,
        subscription = entry.subscription.as_str()
    );
    let request = door.send_park(Checked::new(), group, entry);
    call(door, Operation::Park, span, request, uncounted).await
}

/// [`ParkedStore::parked`](crate::parked::ParkedStore::parked) through `door`.
pub async fn parked<D: ParkedDoor>(door: &D, group: &str) -> Result<Vec<ParkedEntry>, Error> {
    validate_group(group)?;
    let span = span!("checkpoint.parked", door, group = group);
    let request = door.send_parked(Checked::new(), group);
    call(door, Operation::Parked, span, request, |all| {
        Some(all.len())
    })
    .await
}

/// [`ParkedStore::retry_parked`](crate::parked::ParkedStore::retry_parked) through `door`.
pub async fn retry_parked<D: ParkedDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    partition: u32,
    position: u64,
) -> Result<bool, Error> {
    validate_parked_key(group, subscription, position)?;
    let span = span!(
        "checkpoint.retry_parked",
        door,
        group = group,
        subscription = subscription,
        partition = partition
    );
    let request = door.send_retry_parked(Checked::new(), group, subscription, partition, position);
    call(door, Operation::RetryParked, span, request, uncounted).await
}

/// [`ParkedStore::unpark`](crate::parked::ParkedStore::unpark) through `door`.
pub async fn unpark<D: ParkedDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    partition: u32,
    position: u64,
) -> Result<bool, Error> {
    validate_parked_key(group, subscription, position)?;
    let span = span!(
        "checkpoint.unpark",
        door,
        group = group,
        subscription = subscription,
        partition = partition
    );
    let request = door.send_unpark(Checked::new(), group, subscription, partition, position);
    call(door, Operation::Unpark, span, request, uncounted).await
}
