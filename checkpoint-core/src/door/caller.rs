//! The front of the `*_in` family: the same checks, span (`checkpoint.<operation>_in`) and
//! bound as the store's own operations, for a request the backend sends on a connection or
//! transaction the caller holds, so that a read model and its checkpoint commit together.
//!
//! Each takes the request as a function of the [`Checked`] proof: the backend builds it on
//! the caller's connection once the input is accepted.

use std::future::Future;

use super::{Checked, Door, call, span, uncounted};
use crate::checkpoint::Checkpoint;
use crate::error::{Error, Operation};
use crate::validation::{
    validate_advance, validate_batch, validate_claim, validate_group, validate_key, validate_save,
};

/// [`load`](super::front::load) on the caller's connection: `request` sends it there.
pub async fn load_in<D: Door, F>(
    door: &D,
    (group, subscription, partition): (&str, &str, u32),
    request: impl FnOnce(Checked) -> F,
) -> Result<Option<u64>, Error>
where
    F: Future<Output = Result<Option<u64>, Error>> + Send,
{
    validate_key(group, subscription)?;
    let span = span!(
        "checkpoint.load_in",
        door,
        group = group,
        subscription = subscription,
        partition = partition
    );
    call(
        door,
        Operation::Load,
        span,
        request(Checked::new()),
        uncounted,
    )
    .await
}

/// [`list`](super::front::list) on the caller's connection: `request` sends it there.
pub async fn list_in<D: Door, F>(
    door: &D,
    group: &str,
    request: impl FnOnce(Checked) -> F,
) -> Result<Vec<Checkpoint>, Error>
where
    F: Future<Output = Result<Vec<Checkpoint>, Error>> + Send,
{
    validate_group(group)?;
    let span = span!("checkpoint.list_in", door, group = group);
    let count = |all: &Vec<Checkpoint>| Some(all.len());
    call(door, Operation::List, span, request(Checked::new()), count).await
}

/// [`save`](super::front::save) on the caller's connection: `request` sends it there.
pub async fn save_in<D: Door, F>(
    door: &D,
    (group, subscription, partition): (&str, &str, u32),
    position: u64,
    request: impl FnOnce(Checked) -> F,
) -> Result<(), Error>
where
    F: Future<Output = Result<(), Error>> + Send,
{
    validate_save(group, subscription, position)?;
    let span = span!(
        "checkpoint.save_in",
        door,
        group = group,
        subscription = subscription,
        partition = partition
    );
    call(
        door,
        Operation::Save,
        span,
        request(Checked::new()),
        uncounted,
    )
    .await
}

/// [`save_all`](super::front::save_all) on the caller's connection: `request` sends it there
/// (never for an empty batch, answered here).
pub async fn save_all_in<D: Door, F>(
    door: &D,
    group: &str,
    checkpoints: &[Checkpoint],
    request: impl FnOnce(Checked) -> F,
) -> Result<(), Error>
where
    F: Future<Output = Result<(), Error>> + Send,
{
    validate_batch(group, checkpoints)?;
    if checkpoints.is_empty() {
        return Ok(());
    }
    let span = span!(
        "checkpoint.save_all_in",
        door,
        group = group,
        batch_size = checkpoints.len()
    );
    call(
        door,
        Operation::SaveAll,
        span,
        request(Checked::new()),
        uncounted,
    )
    .await
}

/// [`claim`](super::front::claim) on the caller's connection: `request` sends it there.
pub async fn claim_in<D: Door, F>(
    door: &D,
    (group, subscription, partition): (&str, &str, u32),
    initial_position: u64,
    request: impl FnOnce(Checked) -> F,
) -> Result<u64, Error>
where
    F: Future<Output = Result<u64, Error>> + Send,
{
    validate_claim(group, subscription, initial_position)?;
    let span = span!(
        "checkpoint.claim_in",
        door,
        group = group,
        subscription = subscription,
        partition = partition
    );
    call(
        door,
        Operation::Claim,
        span,
        request(Checked::new()),
        uncounted,
    )
    .await
}

/// [`advance`](super::front::advance) on the caller's connection: `request` sends it there.
pub async fn advance_in<D: Door, F>(
    door: &D,
    (group, subscription, partition): (&str, &str, u32),
    (from, to): (u64, u64),
    request: impl FnOnce(Checked) -> F,
) -> Result<(), Error>
where
    F: Future<Output = Result<(), Error>> + Send,
{
    validate_advance(group, subscription, from, to)?;
    let span = span!(
        "checkpoint.advance_in",
        door,
        group = group,
        subscription = subscription,
        partition = partition
    );
    call(
        door,
        Operation::Advance,
        span,
        request(Checked::new()),
        uncounted,
    )
    .await
}
