//! The door and the front of [`CheckpointStore`](crate::CheckpointStore).

use std::future::Future;

use super::{Checked, Door, call, span, uncounted};
use crate::checkpoint::Checkpoint;
use crate::error::{Error, Operation};
use crate::validation::{validate_batch, validate_group, validate_key, validate_save};

/// A backend's requests for [`CheckpointStore`](crate::CheckpointStore), each called by the
/// front with checked input, in the operation's span and under [`Door::bound`].
pub trait CheckpointDoor: Door {
    /// Every checkpoint of `group`.
    fn send_list(
        &self,
        checked: Checked,
        group: &str,
    ) -> impl Future<Output = Result<Vec<Checkpoint>, Error>> + Send;

    /// The stored position, if any.
    fn send_load(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> impl Future<Output = Result<Option<u64>, Error>> + Send;

    /// Moves the checkpoint to `position` if that is ahead.
    fn send_save(
        &self,
        checked: Checked,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    /// Saves every one of `checkpoints` (never empty: the front answers an empty batch).
    fn send_save_all(
        &self,
        checked: Checked,
        group: &str,
        checkpoints: &[Checkpoint],
    ) -> impl Future<Output = Result<(), Error>> + Send;
}

/// [`CheckpointStore::list`](crate::CheckpointStore::list) through `door`.
pub async fn list<D: CheckpointDoor>(door: &D, group: &str) -> Result<Vec<Checkpoint>, Error> {
    validate_group(group)?;
    let span = span!("checkpoint.list", door, group = group);
    let request = door.send_list(Checked::new(), group);
    call(door, Operation::List, span, request, |all| Some(all.len())).await
}

/// [`CheckpointStore::load`](crate::CheckpointStore::load) through `door`.
pub async fn load<D: CheckpointDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    partition: u32,
) -> Result<Option<u64>, Error> {
    validate_key(group, subscription)?;
    let span = span!(
        "checkpoint.load",
        door,
        group = group,
        subscription = subscription,
        partition = partition
    );
    let request = door.send_load(Checked::new(), group, subscription, partition);
    call(door, Operation::Load, span, request, uncounted).await
}

/// [`CheckpointStore::save`](crate::CheckpointStore::save) through `door`.
pub async fn save<D: CheckpointDoor>(
    door: &D,
    group: &str,
    subscription: &str,
    partition: u32,
    position: u64,
) -> Result<(), Error> {
    validate_save(group, subscription, position)?;
    let span = span!(
        "checkpoint.save",
        door,
        group = group,
        subscription = subscription,
        partition = partition
    );
    let request = door.send_save(Checked::new(), group, subscription, partition, position);
    call(door, Operation::Save, span, request, uncounted).await
}

/// [`CheckpointStore::save_all`](crate::CheckpointStore::save_all) through `door`: an empty
/// batch is answered here, with no request.
pub async fn save_all<D: CheckpointDoor>(
    door: &D,
    group: &str,
    checkpoints: &[Checkpoint],
) -> Result<(), Error> {
    validate_batch(group, checkpoints)?;
    if checkpoints.is_empty() {
        return Ok(());
    }
    let span = span!(
        "checkpoint.save_all",
        door,
        group = group,
        batch_size = checkpoints.len()
    );
    let request = door.send_save_all(Checked::new(), group, checkpoints);
    call(door, Operation::SaveAll, span, request, uncounted).await
}
