//! What `parked retry` and `parked drop` share: the parked entry's key, checked before any
//! request, how messages name it, and the refusal when nothing is parked there.

use checkpoint_core::Error;
use checkpoint_core::parked::{ParkedEntry, ParkedStore, validate_parked_key};

use super::{failed, quoted, subscription_of};
use crate::error::CliError;

/// The key of one parked entry, checked.
pub(super) struct ParkedKey<'a> {
    /// The group.
    pub group: &'a str,
    /// The subscription that parked it.
    pub subscription: &'a str,
    /// Its partition.
    pub partition: u32,
    /// Its position in the partition.
    pub position: u64,
    /// `position 41 of partition 3 of subscription "s" of group "g"`, for messages.
    pub at: String,
}

impl<'a> ParkedKey<'a> {
    /// The key, checked as the store checks it, before any request.
    ///
    /// # Errors
    ///
    /// A usage error (exit code 2) for an invalid name or position.
    pub fn checked(
        group: &'a str,
        subscription: &'a str,
        partition: u32,
        position: u64,
    ) -> Result<Self, CliError> {
        validate_parked_key(group, subscription, position).map_err(|e| failed(&e))?;
        let at = format!(
            "position {position} of partition {partition} of {}",
            subscription_of(group, subscription)
        );
        Ok(Self {
            group,
            subscription,
            partition,
            position,
            at,
        })
    }

    /// The entry parked at the key, read from the group's parked entries (one request).
    ///
    /// # Errors
    ///
    /// Refused (exit code 3) when nothing is parked there; the store's error.
    pub async fn find(&self, store: &dyn ParkedStore) -> Result<ParkedEntry, CliError> {
        let parked = store.parked(self.group).await.map_err(|e| failed(&e))?;
        parked
            .into_iter()
            .find(|entry| {
                (entry.subscription.as_str(), entry.partition, entry.position)
                    == (self.subscription, self.partition, self.position)
            })
            .ok_or_else(|| self.nothing_parked())
    }

    /// `Ok` when the store's operation on the key (`retry_parked`, `unpark`: whether the entry
    /// was parked) found the entry.
    ///
    /// # Errors
    ///
    /// Refused (exit code 3) when it did not: nothing is parked there; the store's error.
    pub fn found(&self, answer: Result<bool, Error>) -> Result<(), CliError> {
        match answer {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.nothing_parked()),
            Err(error) => Err(failed(&error)),
        }
    }

    /// Refused: nothing is parked at the key.
    fn nothing_parked(&self) -> CliError {
        CliError::refused(format!(
            "nothing is parked at {} (checkpoint parked {} lists what is)",
            self.at,
            quoted(self.group)
        ))
    }
}
