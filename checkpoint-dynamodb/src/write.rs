//! The write path of `save` (each entry of `save_all` too) and `claim`: one conditional request
//! when the item exists and is live, as every write after a checkpoint's first is; otherwise
//! the item as it was decides, and an absent item goes through the create protocol.
//!
//! The create protocol, once in a checkpoint's lifetime (see the crate documentation for why
//! it is safe without transactions):
//!
//! - (a) `PutItem` of the item with `pending = true`, only where no item is;
//! - (b) a consistent `GetItem` of the subscription's tombstone: if there is one, the item is
//!   marked `retired` and the write is ignored (a claim fails with `Error::Retired`);
//! - (c) `REMOVE pending`, only if the item is not `retired`: from here on reads show it.
//!
//! A write that finds a pending item (another write between (a) and (c), or one that crashed
//! there) runs (b) and (c) itself, then goes on with its own write.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::AttributeValue;
use checkpoint_core::{Error, Fingerprint, Operation, UnexpectedValue};

use crate::error::{Contended, is_condition_failed, sdk_error, unexpected};
use crate::layout::{Stored, stored_of};
use crate::{BACKEND, DynamoDbCheckpointStore, requests};

/// How many steps a write takes at most. A write on a live item takes one; creating one takes
/// three to four (and a claim one more when a save created the item); only items deleted and
/// created again under it (concurrent purges) take more. Past this, the write fails, retryable.
pub(crate) const WRITE_STEPS: u32 = 10;

type Item = HashMap<String, AttributeValue>;

/// What a write knows of its item.
enum Seen {
    /// A refused request came back without the item: either there is none, or the server does
    /// not send it (dynalite). Step (a) tells which.
    Unknown,
    /// The item, as the last request or read found it.
    Known(Stored),
}

impl DynamoDbCheckpointStore {
    /// The whole of `save`, and of each entry of `save_all`: ignored when the checkpoint is
    /// ahead or equal, or retired.
    pub(crate) async fn save_one(
        &self,
        op: Operation,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        let Some(mut seen) = self
            .try_save(op, group, subscription, partition, position)
            .await?
        else {
            return Ok(());
        };
        for _ in 0..WRITE_STEPS {
            seen = match seen {
                Seen::Known(Stored::Retired) => return Ok(()),
                Seen::Known(Stored::Live {
                    position: stored, ..
                }) if stored >= position => return Ok(()),
                Seen::Known(Stored::Live { .. }) => {
                    match self
                        .try_save(op, group, subscription, partition, position)
                        .await?
                    {
                        None => return Ok(()),
                        Some(seen) => seen,
                    }
                }
                Seen::Known(Stored::Absent) | Seen::Unknown => {
                    self.create(op, group, subscription, partition, position, None)
                        .await?
                }
                Seen::Known(Stored::Pending) => {
                    self.finish_create(op, group, subscription, partition)
                        .await?
                }
            };
        }
        Err(contended(op))
    }

    /// The whole of `claim`: the stored position under the same fingerprint,
    /// [`Error::QueryChanged`] under another, [`Error::Retired`] when retired.
    pub(crate) async fn claim_one(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        let op = Operation::Claim;
        let mut seen = self
            .try_claim(
                group,
                subscription,
                partition,
                fingerprint,
                initial_position,
            )
            .await?;
        for _ in 0..WRITE_STEPS {
            seen = match seen {
                Seen::Known(Stored::Retired) => return Err(Error::retired(group, subscription)),
                // What a claim of this item returns, without sending it: it would change
                // nothing.
                Seen::Known(Stored::Live {
                    position,
                    fingerprint: Some(stored),
                }) => {
                    return if stored == fingerprint {
                        Ok(position)
                    } else {
                        Err(Error::QueryChanged {
                            stored,
                            requested: fingerprint,
                        })
                    };
                }
                Seen::Known(Stored::Live {
                    fingerprint: None, ..
                }) => {
                    self.try_claim(
                        group,
                        subscription,
                        partition,
                        fingerprint,
                        initial_position,
                    )
                    .await?
                }
                Seen::Known(Stored::Absent) | Seen::Unknown => {
                    let created = Some(fingerprint);
                    self.create(
                        op,
                        group,
                        subscription,
                        partition,
                        initial_position,
                        created,
                    )
                    .await?
                }
                Seen::Known(Stored::Pending) => {
                    self.finish_create(op, group, subscription, partition)
                        .await?
                }
            };
        }
        Err(contended(op))
    }

    /// The save's one `UpdateItem`: `None` when it took effect, else what its refusal says.
    async fn try_save(
        &self,
        op: Operation,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<Option<Seen>, Error> {
        let request = requests::save(self, group, subscription, partition, position);
        match request.send().await {
            Ok(_) => Ok(None),
            Err(error) => match error.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                    seen_in(op, failed.item()).map(Some)
                }
                _ => Err(sdk_error(op, error)),
            },
        }
    }

    /// The claim's one `UpdateItem`: the item as it is afterwards, or as it was when refused.
    async fn try_claim(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<Seen, Error> {
        let op = Operation::Claim;
        let request = requests::claim(
            self,
            group,
            subscription,
            partition,
            fingerprint,
            initial_position,
        );
        let output = match request.send().await {
            Ok(output) => output,
            Err(error) => {
                return match error.as_service_error() {
                    Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                        seen_in(op, failed.item())
                    }
                    _ => Err(sdk_error(op, error)),
                };
            }
        };
        let item = match output.attributes.filter(|item| !item.is_empty()) {
            Some(item) => item,
            // A reply without the item (a server or client that leaves `ReturnValues` out): the
            // item exists now, so read it. The claim changed nothing a later claim would not
            // change again, and positions only move forward, so what the read finds is what a
            // claim at the time of the read returns.
            None => self
                .read_claimed(op, group, subscription, partition)
                .await?
                .ok_or_else(|| {
                    unexpected(op)(UnexpectedValue::new(
                        "claim reply",
                        "no item, and none on a consistent read right after the claim",
                    ))
                })?,
        };
        let stored = stored_of(Some(&item)).map_err(unexpected(op))?;
        if let Stored::Live {
            fingerprint: None, ..
        } = stored
        {
            // `if_not_exists` has just set it, so only a broken server gets here.
            return Err(unexpected(op)(UnexpectedValue::new(
                "fingerprint",
                "nothing right after the claim set it",
            )));
        }
        Ok(Seen::Known(stored))
    }

    /// Step (a): the item, pending, where there is none; else the item in the way.
    async fn create(
        &self,
        op: Operation,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
        fingerprint: Option<Fingerprint>,
    ) -> Result<Seen, Error> {
        let request =
            requests::put_pending(self, group, subscription, partition, position, fingerprint);
        match request.send().await {
            Ok(_) => Ok(Seen::Known(Stored::Pending)),
            Err(error) => match error.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(failed)) => {
                    match failed.item().filter(|item| !item.is_empty()) {
                        Some(item) => seen_in(op, Some(item)),
                        None => self
                            .read_stored(op, group, subscription, partition)
                            .await
                            .map(Seen::Known),
                    }
                }
                _ => Err(sdk_error(op, error)),
            },
        }
    }

    /// Steps (b) and (c) on a pending item: retired if the subscription has a tombstone, else
    /// visible; the item as it is afterwards.
    async fn finish_create(
        &self,
        op: Operation,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Seen, Error> {
        let tombstone = requests::get_tombstone(self, group, subscription)
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        if tombstone.item.is_some_and(|item| !item.is_empty()) {
            tracing::debug!("the subscription is retired: the pending item is retired too");
            match requests::mark_retired(self, group, subscription, partition)
                .send()
                .await
            {
                // Refused: a purge deleted the item meanwhile; it was retired either way.
                Err(error) if !is_condition_failed(&error) => return Err(sdk_error(op, error)),
                _ => return Ok(Seen::Known(Stored::Retired)),
            }
        }
        match requests::finish_pending(self, group, subscription, partition)
            .send()
            .await
        {
            Ok(output) => match output.attributes.filter(|item| !item.is_empty()) {
                Some(item) => seen_in(op, Some(&item)),
                None => self
                    .read_stored(op, group, subscription, partition)
                    .await
                    .map(Seen::Known),
            },
            Err(error) => match error.as_service_error() {
                // Retired meanwhile, or deleted by a purge: the item as it was says which.
                Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                    match failed.item().filter(|item| !item.is_empty()) {
                        Some(item) => seen_in(op, Some(item)),
                        None => self
                            .read_stored(op, group, subscription, partition)
                            .await
                            .map(Seen::Known),
                    }
                }
                _ => Err(sdk_error(op, error)),
            },
        }
    }

    /// The whole item, on a consistent read: where a refusal came back without it.
    async fn read_stored(
        &self,
        op: Operation,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Stored, Error> {
        let output = requests::get_item(self, group, subscription, partition)
            .send()
            .await
            .map_err(|e| sdk_error(op, e))?;
        stored_of(output.item()).map_err(unexpected(op))
    }
}

/// What an item returned by a refusal says: [`Seen::Unknown`] when there is none.
fn seen_in(op: Operation, item: Option<&Item>) -> Result<Seen, Error> {
    match item.filter(|item| !item.is_empty()) {
        Some(item) => stored_of(Some(item))
            .map(Seen::Known)
            .map_err(unexpected(op)),
        None => Ok(Seen::Unknown),
    }
}

/// A write that gave up after [`WRITE_STEPS`]: retryable.
fn contended(op: Operation) -> Error {
    Error::backend(
        BACKEND,
        op,
        true,
        Contended {
            attempts: WRITE_STEPS,
        },
    )
}
