//! Deliberately broken stores, each with one flaw a real backend could have.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use checkpoint_core::validation::{
    validate_advance, validate_batch, validate_claim, validate_group, validate_key, validate_save,
};
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};

/// The one thing a broken store gets wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flaw {
    /// `save` overwrites instead of keeping the maximum.
    Overwrites,
    /// `save` reads, then writes the maximum, without atomicity (a round trip in between).
    ReadsThenWrites,
    /// `list` returns the checkpoints of every group whose name starts with the group's.
    ListLeaksOtherGroups,
    /// `save_all` keeps the first of repeated keys instead of the highest.
    SaveAllKeepsFirst,
    /// Positions are kept as `f64`.
    PositionsAsF64,
    /// `advance` moves without comparing with `from`.
    AdvanceDoesNotCompare,
    /// `claim` ignores the stored fingerprint.
    ClaimIgnoresFingerprint,
    /// `claim` reads, then creates, without atomicity.
    ClaimReadsThenCreates,
    /// `save` accepts positions above `i64::MAX` instead of rejecting them.
    SaveSkipsPositionCheck,
}

impl Flaw {
    pub const ALL: [Flaw; 9] = [
        Flaw::Overwrites,
        Flaw::ReadsThenWrites,
        Flaw::ListLeaksOtherGroups,
        Flaw::SaveAllKeepsFirst,
        Flaw::PositionsAsF64,
        Flaw::AdvanceDoesNotCompare,
        Flaw::ClaimIgnoresFingerprint,
        Flaw::ClaimReadsThenCreates,
        Flaw::SaveSkipsPositionCheck,
    ];
}

#[derive(Debug, Clone, Copy)]
struct Row {
    /// Kept as f64 bits when the flaw is `PositionsAsF64`.
    position: u64,
    fingerprint: Option<Fingerprint>,
}

type Key = (String, String, u32);

/// A store that is right except for its flaw.
#[derive(Debug)]
pub struct BrokenStore {
    flaw: Flaw,
    rows: Mutex<HashMap<Key, Row>>,
}

impl BrokenStore {
    pub fn new(flaw: Flaw) -> Self {
        Self {
            flaw,
            rows: Mutex::new(HashMap::new()),
        }
    }

    fn rows(&self) -> MutexGuard<'_, HashMap<Key, Row>> {
        self.rows
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn encode(&self, position: u64) -> u64 {
        if self.flaw == Flaw::PositionsAsF64 {
            (position as f64) as u64
        } else {
            position
        }
    }

    fn key(group: &str, subscription: &str, partition: u32) -> Key {
        (group.to_owned(), subscription.to_owned(), partition)
    }

    async fn save_one(&self, group: &str, subscription: &str, partition: u32, position: u64) {
        let key = Self::key(group, subscription, partition);
        let position = self.encode(position);
        match self.flaw {
            Flaw::Overwrites => {
                let mut rows = self.rows();
                let fingerprint = rows.get(&key).and_then(|row| row.fingerprint);
                rows.insert(
                    key,
                    Row {
                        position,
                        fingerprint,
                    },
                );
            }
            Flaw::ReadsThenWrites => {
                let read = self.rows().get(&key).copied();
                // The round trip between the read and the write, where other saves land.
                tokio::task::yield_now().await;
                let position = read.map_or(position, |row| row.position.max(position));
                let fingerprint = read.and_then(|row| row.fingerprint);
                self.rows().insert(
                    key,
                    Row {
                        position,
                        fingerprint,
                    },
                );
            }
            _ => {
                let mut rows = self.rows();
                let row = rows.entry(key).or_insert(Row {
                    position,
                    fingerprint: None,
                });
                row.position = row.position.max(position);
            }
        }
    }
}

#[async_trait]
impl CheckpointStore for BrokenStore {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        validate_group(group)?;
        let leak = self.flaw == Flaw::ListLeaksOtherGroups;
        Ok(self
            .rows()
            .iter()
            .filter(|((g, _, _), _)| g == group || (leak && g.starts_with(group)))
            .map(|((_, s, p), row)| Checkpoint::new(s.clone(), *p, row.position))
            .collect())
    }

    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        validate_key(group, subscription)?;
        Ok(self
            .rows()
            .get(&Self::key(group, subscription, partition))
            .map(|row| row.position))
    }

    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        if self.flaw == Flaw::SaveSkipsPositionCheck {
            validate_key(group, subscription)?;
        } else {
            validate_save(group, subscription, position)?;
        }
        self.save_one(group, subscription, partition, position)
            .await;
        Ok(())
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        let mut entries: Vec<&Checkpoint> = Vec::new();
        for checkpoint in checkpoints {
            let repeated = entries.iter().any(|e| {
                e.subscription == checkpoint.subscription && e.partition == checkpoint.partition
            });
            if !(self.flaw == Flaw::SaveAllKeepsFirst && repeated) {
                entries.push(checkpoint);
            }
        }
        if self.flaw == Flaw::SaveAllKeepsFirst {
            // Keeping the first: later repeats were dropped above, and the first is written as
            // the key's value outright.
            let mut rows = self.rows();
            for e in entries {
                let key = Self::key(group, &e.subscription, e.partition);
                let row = rows.entry(key).or_insert(Row {
                    position: e.position,
                    fingerprint: None,
                });
                row.position = row.position.max(e.position);
            }
            return Ok(());
        }
        for e in entries {
            self.save_one(group, &e.subscription, e.partition, e.position)
                .await;
        }
        Ok(())
    }
}

#[async_trait]
impl ExclusiveCheckpointStore for BrokenStore {
    async fn claim(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        validate_claim(group, subscription, initial_position)?;
        let key = Self::key(group, subscription, partition);
        let initial = Row {
            position: self.encode(initial_position),
            fingerprint: Some(fingerprint),
        };
        let row = if self.flaw == Flaw::ClaimReadsThenCreates {
            let read = self.rows().get(&key).copied();
            tokio::task::yield_now().await;
            match read {
                Some(row) => row,
                None => {
                    self.rows().insert(key, initial);
                    initial
                }
            }
        } else {
            let mut rows = self.rows();
            let row = rows.entry(key).or_insert(initial);
            if row.fingerprint.is_none() {
                row.fingerprint = Some(fingerprint);
            }
            *row
        };
        match row.fingerprint {
            Some(stored) if stored != fingerprint && self.flaw != Flaw::ClaimIgnoresFingerprint => {
                Err(Error::QueryChanged {
                    stored,
                    requested: fingerprint,
                })
            }
            _ => Ok(row.position),
        }
    }

    async fn advance(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        validate_advance(group, subscription, from, to)?;
        let mut rows = self.rows();
        let to = self.encode(to);
        match rows.get_mut(&Self::key(group, subscription, partition)) {
            Some(row) if row.position == from || self.flaw == Flaw::AdvanceDoesNotCompare => {
                row.position = to;
                Ok(())
            }
            other => Err(Error::Moved {
                expected: from,
                current: other.map(|row| row.position),
            }),
        }
    }
}
