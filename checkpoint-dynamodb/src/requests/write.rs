//! The write path of `save` (each entry of `save_all` too) and `claim`: one conditional request
//! when the item exists and is live, as every write after a checkpoint's first is; otherwise
//! the item as it was decides, and an absent or pending item goes through the
//! [create protocol](super::create).

use checkpoint_core::{Error, Fingerprint, Operation};

use super::Key;
use super::checkpoint::{self, Seen};
use super::create;
use crate::error::Contended;
use crate::layout::Stored;
use crate::{BACKEND, DynamoDbCheckpointStore};

/// How many steps a write takes at most. A write on a live item takes one; creating one takes
/// three to four (and a claim one more when a save created the item); only items deleted and
/// created again under it (concurrent purges) take more. Past this, the write fails, retryable.
const WRITE_STEPS: u32 = 10;

/// The whole of `save`, and of each entry of `save_all`: ignored when the checkpoint is ahead
/// or equal, or retired.
pub(crate) async fn save(
    store: &DynamoDbCheckpointStore,
    op: Operation,
    key: Key<'_>,
    position: u64,
) -> Result<(), Error> {
    let Some(mut seen) = checkpoint::save(store, op, key, position).await? else {
        return Ok(());
    };
    for _ in 0..WRITE_STEPS {
        seen = match seen {
            Seen::Known(Stored::Retired) => return Ok(()),
            Seen::Known(Stored::Live {
                position: stored, ..
            }) if stored >= position => return Ok(()),
            Seen::Known(Stored::Live { .. }) => {
                match checkpoint::save(store, op, key, position).await? {
                    None => return Ok(()),
                    Some(seen) => seen,
                }
            }
            Seen::Known(Stored::Absent) | Seen::Unknown => {
                create::create(store, op, key, position, None).await?
            }
            Seen::Known(Stored::Pending) => create::finish(store, op, key).await?,
        };
    }
    Err(contended(op))
}

/// The whole of `claim`: the stored position under the same fingerprint,
/// [`Error::QueryChanged`] under another, [`Error::Retired`] when retired.
pub(crate) async fn claim(
    store: &DynamoDbCheckpointStore,
    key: Key<'_>,
    fingerprint: Fingerprint,
    initial_position: u64,
) -> Result<u64, Error> {
    let op = Operation::Claim;
    let (group, subscription, _) = key;
    let mut seen = checkpoint::claim(store, key, fingerprint, initial_position).await?;
    for _ in 0..WRITE_STEPS {
        seen = match seen {
            Seen::Known(Stored::Retired) => return Err(Error::retired(group, subscription)),
            // What a claim of this item returns, without sending it: it would change nothing.
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
            }) => checkpoint::claim(store, key, fingerprint, initial_position).await?,
            Seen::Known(Stored::Absent) | Seen::Unknown => {
                create::create(store, op, key, initial_position, Some(fingerprint)).await?
            }
            Seen::Known(Stored::Pending) => create::finish(store, op, key).await?,
        };
    }
    Err(contended(op))
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
