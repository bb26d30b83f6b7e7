//! The door and the front of [`ExclusiveCheckpointStore`](crate::ExclusiveCheckpointStore).

use std::future::Future;

use super::{Checked, Door, call, span, uncounted};
use crate::error::{Error, Operation};
use crate::fingerprint::Fingerprint;
use crate::validation::{validate_advance, validate_claim};

/// A backend's requests for [`ExclusiveCheckpointStore`](crate::ExclusiveCheckpointStore).
pub trait ExclusiveDoor: Door {
    /// The stored position, created at `initial_position` with `fingerprint` on first use.
    fn send_claim(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> impl Future<Output = Result<u64, Error>> + Send;

    /// Moves the position from `from` to `to` if it is still `from`.
    fn send_advance(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// [`ExclusiveCheckpointStore::claim`](crate::ExclusiveCheckpointStore::claim) through `door`.
pub async fn claim<D: ExclusiveDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    partition: u32,
    fingerprint: Fingerprint,
    initial_position: u64,
) -> Result<u64, Error> {
    validate_claim(group, subscription, initial_position)?;
    let span = span!(
        "checkpoint.claim",
        door,
        group = group,
        subscription = subscription,
        partition = partition
    );
    let request = door.send_claim(
        Checked::new(),
        group,
        subscription,
        partition,
        fingerprint,
        initial_position,
    );
    call(door, Operation::Claim, span, request, uncounted).await
}

/// [`ExclusiveCheckpointStore::advance`](crate::ExclusiveCheckpointStore::advance) through
/// `door`.
pub async fn advance<D: ExclusiveDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    partition: u32,
    from: u64,
    to: u64,
) -> Result<(), Error> {
    validate_advance(group, subscription, from, to)?;
    let span = span!(
        "checkpoint.advance",
        door,
        group = group,
        subscription = subscription,
        partition = partition
    );
    let request = door.send_advance(Checked::new(), group, subscription, partition, from, to);
    call(door, Operation::Advance, span, request, uncounted).await
}
