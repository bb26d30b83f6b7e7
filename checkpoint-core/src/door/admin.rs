//! The door and the front of [`CheckpointAdmin`](crate::CheckpointAdmin).

use std::future::Future;

use super::{Checked, Door, call, span, uncounted};
use crate::error::{Error, Operation};
use crate::validation::{validate_group, validate_key, validate_start_at};

/// A backend's requests for [`CheckpointAdmin`](crate::CheckpointAdmin).
pub trait AdminDoor: Door {
    /// Every group, sorted by bytes, each once.
    fn send_groups(
        &self,
        checked: Checked,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send;

    /// Creates the subscription at `positions` (checked: not empty, no partition twice).
    fn send_start_at(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Retires the subscription.
    fn send_retire(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// The retired subscriptions of `group`, sorted, each once.
    fn send_retired(
        &self,
        checked: Checked,
        group: &str,
    ) -> impl Future<Output = Result<Vec<String>, Error>> + Send;

    /// Removes every trace of a retired subscription.
    fn send_purge(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// [`CheckpointAdmin::groups`](crate::CheckpointAdmin::groups) through `door`.
pub async fn groups<D: AdminDoor>(door: &D) -> Result<Vec<String>, Error> {
    let span = span!("checkpoint.groups", door);
    let request = door.send_groups(Checked::new());
    call(door, Operation::Groups, span, request, |all| {
        Some(all.len())
    })
    .await
}

/// [`CheckpointAdmin::start_at`](crate::CheckpointAdmin::start_at) through `door`.
pub async fn start_at<D: AdminDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    positions: &[(u32, u64)],
) -> Result<(), Error> {
    validate_start_at(group, subscription, positions)?;
    let span = span!(
        "checkpoint.start_at",
        door,
        group = group,
        subscription = subscription,
        partitions = positions.len()
    );
    let request = door.send_start_at(Checked::new(), group, subscription, positions);
    call(door, Operation::StartAt, span, request, uncounted).await
}

/// [`CheckpointAdmin::retire`](crate::CheckpointAdmin::retire) through `door`.
pub async fn retire<D: AdminDoor>(door: &D, group: &str, subscription: &str) -> Result<(), Error> {
    validate_key(group, subscription)?;
    let span = span!(
        "checkpoint.retire",
        door,
        group = group,
        subscription = subscription
    );
    let request = door.send_retire(Checked::new(), group, subscription);
    call(door, Operation::Retire, span, request, uncounted).await
}

/// [`CheckpointAdmin::retired`](crate::CheckpointAdmin::retired) through `door`.
pub async fn retired<D: AdminDoor>(door: &D, group: &str) -> Result<Vec<String>, Error> {
    validate_group(group)?;
    let span = span!("checkpoint.retired", door, group = group);
    let request = door.send_retired(Checked::new(), group);
    call(door, Operation::Retired, span, request, |all| {
        Some(all.len())
    })
    .await
}

/// [`CheckpointAdmin::purge`](crate::CheckpointAdmin::purge) through `door`.
pub async fn purge<D: AdminDoor>(door: &D, group: &str, subscription: &str) -> Result<(), Error> {
    validate_key(group, subscription)?;
    let span = span!(
        "checkpoint.purge",
        door,
        group = group,
        subscription = subscription
    );
    let request = door.send_purge(Checked::new(), group, subscription);
    call(door, Operation::Purge, span, request, uncounted).await
}
