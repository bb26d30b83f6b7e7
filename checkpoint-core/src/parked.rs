//! Parked entries: what a subscription records about an entry its handler failed on every
//! retry, so that it can move on without skipping that entry silently.
//!
//! A subscription that parks a poison entry goes on with the entries after it; its checkpoint
//! moves past the parked one. The parked record is what remains of it: the entry's key
//! (group, subscription, partition, position), the handler's last error and how many attempts
//! were made. An operator lists them (`checkpoint parked GROUP`), asks for one to be retried
//! (the subscription that holds its partition re-reads the entry from the source and runs the
//! handler again; on success the record is removed), or removes one after dealing with it by
//! hand.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! use checkpoint_core::parked::{ParkedEntry, ParkedStore};
//! use checkpoint_core::InMemoryCheckpointStore;
//!
//! let store = InMemoryCheckpointStore::new();
//! store.park("billing", &ParkedEntry::new("invoices", 3, 41, "no such customer", 5)).await?;
//!
//! let parked = store.parked("billing").await?;
//! assert_eq!((parked[0].partition, parked[0].position, parked[0].attempts), (3, 41, 5));
//! assert!(store.retry_parked("billing", "invoices", 3, 41).await?);
//! assert!(store.parked("billing").await?[0].retry_requested);
//! assert!(store.unpark("billing", "invoices", 3, 41).await?);
//! assert!(store.parked("billing").await?.is_empty());
//! # Ok::<(), checkpoint_core::Error>(())
//! # }).unwrap();
//! ```

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;

use crate::Error;
use crate::error::{Argument, InvalidInput, InvalidReason};
use crate::validation::{validate_key, validate_name, validate_position};

/// The longest error text a parked entry keeps, in bytes of UTF-8.
/// [`ParkedEntry::new`] cuts a longer one at a character boundary.
pub const MAX_ERROR_BYTES: usize = 4096;

/// An entry a subscription's handler failed on every retry, as a [`ParkedStore`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParkedEntry {
    /// The subscription whose handler failed.
    pub subscription: String,
    /// The partition of the entry.
    pub partition: u32,
    /// The position of the entry in its partition.
    pub position: u64,
    /// The handler's last error, as text: at most [`MAX_ERROR_BYTES`] bytes, no NUL.
    pub error: String,
    /// How many times the handler ran on the entry.
    pub attempts: u32,
    /// When it was parked, by the parking process's clock, to the millisecond.
    pub parked_at: SystemTime,
    /// Whether an operator asked for it to be retried
    /// ([`ParkedStore::retry_parked`]) since it was last parked.
    pub retry_requested: bool,
}

impl ParkedEntry {
    /// A record parked now, with no retry requested. The error text is cut to
    /// [`MAX_ERROR_BYTES`] at a character boundary and its NUL characters replaced by `\u{FFFD}`,
    /// so that every store keeps it verbatim.
    pub fn new(
        subscription: impl Into<String>,
        partition: u32,
        position: u64,
        error: impl Into<String>,
        attempts: u32,
    ) -> Self {
        Self {
            subscription: subscription.into(),
            partition,
            position,
            error: storable_error(error.into()),
            attempts,
            parked_at: to_millis(SystemTime::now()),
            retry_requested: false,
        }
    }

    /// `parked_at` as milliseconds since the Unix epoch (0 for a time before it): how the
    /// stores keep it.
    pub fn parked_at_millis(&self) -> i64 {
        millis_since_epoch(self.parked_at)
    }
}

/// Milliseconds since the Unix epoch, 0 for a time before it, saturating at `i64::MAX`.
pub fn millis_since_epoch(time: SystemTime) -> i64 {
    let millis = time
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis());
    i64::try_from(millis).unwrap_or(i64::MAX)
}

/// The time `millis` milliseconds after the Unix epoch (the epoch itself for a negative value).
pub fn time_from_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

fn to_millis(time: SystemTime) -> SystemTime {
    time_from_millis(millis_since_epoch(time))
}

/// The error text cut to [`MAX_ERROR_BYTES`] at a character boundary, NULs replaced.
fn storable_error(error: String) -> String {
    let mut error = if error.contains('\0') {
        error.replace('\0', "\u{FFFD}")
    } else {
        error
    };
    if error.len() > MAX_ERROR_BYTES {
        let mut end = MAX_ERROR_BYTES;
        while !error.is_char_boundary(end) {
            end -= 1;
        }
        error.truncate(end);
    }
    error
}

/// Where parked entries are kept: beside the checkpoints, in the same store.
///
/// Every store of the workspace implements it natively (a table, a key space); a store of
/// your own needs it only to let a subscription park entries. Each operation is one atomic
/// step; records of one group never show in another's [`parked`](Self::parked).
#[async_trait]
pub trait ParkedStore: Send + Sync {
    /// Records `entry` under `group`. Parking an entry that is parked already (same
    /// subscription, partition and position) replaces its error, attempts and time, and
    /// clears its retry request.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidInput`] for an invalid group or subscription name, a position above
    /// [`MAX_POSITION`](crate::validation::MAX_POSITION), or an error text longer than
    /// [`MAX_ERROR_BYTES`] or holding a NUL (nothing is sent); the backend's error otherwise.
    async fn park(&self, group: &str, entry: &ParkedEntry) -> Result<(), Error>;

    /// Every entry parked under `group`, sorted by subscription (by bytes), partition and
    /// position.
    async fn parked(&self, group: &str) -> Result<Vec<ParkedEntry>, Error>;

    /// Asks for a parked entry to be retried: sets its `retry_requested`. Returns whether the
    /// entry was parked. The subscription that holds its partition retries it within its
    /// parked poll interval.
    async fn retry_parked(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error>;

    /// Removes a parked entry (its retry succeeded, or an operator dealt with it). Returns
    /// whether it was parked.
    async fn unpark(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<bool, Error>;
}

/// Checks the arguments of [`ParkedStore::park`].
pub fn validate_park(group: &str, entry: &ParkedEntry) -> Result<(), Error> {
    validate_key(group, &entry.subscription)?;
    validate_position(Argument::Position, entry.position)?;
    if entry.error.len() > MAX_ERROR_BYTES {
        let reason = InvalidReason::TooLong {
            len: entry.error.len(),
            max: MAX_ERROR_BYTES,
        };
        return Err(InvalidInput::new(Argument::ErrorText, reason).into());
    }
    if let Some(byte_offset) = entry.error.bytes().position(|b| b == 0) {
        let reason = InvalidReason::ContainsNul { byte_offset };
        return Err(InvalidInput::new(Argument::ErrorText, reason).into());
    }
    Ok(())
}

/// Checks the arguments of [`ParkedStore::retry_parked`] and [`ParkedStore::unpark`].
pub fn validate_parked_key(group: &str, subscription: &str, position: u64) -> Result<(), Error> {
    validate_name(Argument::Group, group)?;
    validate_name(Argument::Subscription, subscription)?;
    validate_position(Argument::Position, position)?;
    Ok(())
}

macro_rules! forward_parked {
    ($($pointer:ty),*) => {$(
        #[async_trait]
        impl<S: ParkedStore + ?Sized> ParkedStore for $pointer {
            async fn park(&self, group: &str, entry: &ParkedEntry) -> Result<(), Error> {
                (**self).park(group, entry).await
            }
            async fn parked(&self, group: &str) -> Result<Vec<ParkedEntry>, Error> {
                (**self).parked(group).await
            }
            async fn retry_parked(&self, group: &str, subscription: &str, partition: u32,
                position: u64) -> Result<bool, Error> {
                (**self).retry_parked(group, subscription, partition, position).await
            }
            async fn unpark(&self, group: &str, subscription: &str, partition: u32,
                position: u64) -> Result<bool, Error> {
                (**self).unpark(group, subscription, partition, position).await
            }
        }
    )*};
}

forward_parked!(Arc<S>, Box<S>, &S);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_error_is_cut_at_a_character_boundary_and_nuls_are_replaced() {
        let long = "é".repeat(MAX_ERROR_BYTES); // two bytes each
        let entry = ParkedEntry::new("s", 0, 0, long, 1);
        assert_eq!(entry.error.len(), MAX_ERROR_BYTES);
        let entry = ParkedEntry::new("s", 0, 0, "a\0b", 1);
        assert_eq!(entry.error, "a\u{FFFD}b");
        assert!(validate_park("g", &entry).is_ok());
    }

    #[test]
    fn an_error_text_a_store_cannot_keep_is_rejected_naming_it() {
        let mut entry = ParkedEntry::new("s", 0, 0, "", 1);
        entry.error = "x".repeat(MAX_ERROR_BYTES + 1);
        let Err(Error::InvalidInput(invalid)) = validate_park("g", &entry) else {
            panic!("a too long error text passed");
        };
        assert_eq!(invalid.argument, Argument::ErrorText);
        entry.error = "a\0".into();
        assert!(matches!(
            validate_park("g", &entry),
            Err(Error::InvalidInput(_))
        ));
    }

    #[test]
    fn parked_at_keeps_milliseconds() {
        let entry = ParkedEntry::new("s", 0, 0, "e", 1);
        assert_eq!(time_from_millis(entry.parked_at_millis()), entry.parked_at);
    }
}
