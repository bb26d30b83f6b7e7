//! Deliberately broken stores with the operations API, each with one flaw a real backend
//! could have: a store that keeps checkpoints with a live/dead mark per row and a set of
//! tombstones, right except for its flaw.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use checkpoint_core::validation::{
    validate_advance, validate_batch, validate_claim, validate_group, validate_key, validate_save,
    validate_start_at,
};
use checkpoint_core::{
    Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
};

/// The one thing a broken store gets wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminFlaw {
    /// `retire` deletes the checkpoints and leaves no tombstone: a zombie's save brings the
    /// subscription back.
    RetireLeavesNoTombstone,
    /// `retire` marks each existing checkpoint dead, and nothing else: a save to a partition
    /// that had none creates a live one.
    TombstoneGuardsOnlyExistingPartitions,
    /// `retire` deletes, then writes its tombstone in a second step, without atomicity: a save
    /// landing in between stays.
    RetireDeletesThenTombstones,
    /// `retire` deletes every subscription whose name starts with the retired one's.
    RetireTakesPrefixes,
    /// `start_at` writes its positions whether the subscription exists or not.
    StartAtOverwrites,
    /// `start_at` checks that the subscription has no checkpoint, then writes its own in a
    /// second step (as an `INSERT … WHERE NOT EXISTS` under READ COMMITTED does): concurrent
    /// calls over disjoint partitions all pass the check.
    StartAtChecksThenWrites,
    /// `groups` returns at most 1,000 groups.
    GroupsTruncates,
    /// `groups` returns a group per checkpoint, in no order.
    GroupsUnsortedRepeated,
    /// `purge` deletes a live subscription's checkpoints instead of refusing.
    PurgeDeletesLive,
    /// `claim` does not look at the tombstone.
    ClaimIgnoresTombstone,
}

impl AdminFlaw {
    pub const ALL: [AdminFlaw; 10] = [
        AdminFlaw::RetireLeavesNoTombstone,
        AdminFlaw::TombstoneGuardsOnlyExistingPartitions,
        AdminFlaw::RetireDeletesThenTombstones,
        AdminFlaw::RetireTakesPrefixes,
        AdminFlaw::StartAtOverwrites,
        AdminFlaw::StartAtChecksThenWrites,
        AdminFlaw::GroupsTruncates,
        AdminFlaw::GroupsUnsortedRepeated,
        AdminFlaw::PurgeDeletesLive,
        AdminFlaw::ClaimIgnoresTombstone,
    ];
}

#[derive(Debug, Clone, Copy)]
struct Row {
    position: u64,
    fingerprint: Option<Fingerprint>,
    /// Marked dead by a retire (only with `TombstoneGuardsOnlyExistingPartitions`).
    dead: bool,
}

type Key = (String, String, u32);

#[derive(Debug, Default)]
struct State {
    rows: BTreeMap<Key, Row>,
    /// (group, subscription) of every retired subscription.
    tombstones: BTreeSet<(String, String)>,
}

impl State {
    fn retired(&self, group: &str, subscription: &str) -> bool {
        self.tombstones
            .contains(&(group.to_owned(), subscription.to_owned()))
    }

    fn has_rows(&self, group: &str, subscription: &str) -> bool {
        self.rows
            .keys()
            .any(|(g, s, _)| g == group && s == subscription)
    }
}

/// A store that is right except for its flaw.
#[derive(Debug)]
pub struct BrokenAdminStore {
    flaw: AdminFlaw,
    state: Mutex<State>,
}

impl BrokenAdminStore {
    pub fn new(flaw: AdminFlaw) -> Self {
        Self {
            flaw,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn save_one(&self, state: &mut State, group: &str, subscription: &str, p: u32, position: u64) {
        let guarded = match self.flaw {
            AdminFlaw::RetireLeavesNoTombstone
            | AdminFlaw::TombstoneGuardsOnlyExistingPartitions => false,
            _ => state.retired(group, subscription),
        };
        if guarded {
            return;
        }
        let row = state
            .rows
            .entry((group.to_owned(), subscription.to_owned(), p))
            .or_insert(Row {
                position,
                fingerprint: None,
                dead: false,
            });
        if !row.dead {
            row.position = row.position.max(position);
        }
    }
}

#[async_trait]
impl CheckpointStore for BrokenAdminStore {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        validate_group(group)?;
        Ok(self
            .state()
            .rows
            .iter()
            .filter(|((g, _, _), row)| g == group && !row.dead)
            .map(|((_, s, p), row)| Checkpoint::new(s.clone(), *p, row.position))
            .collect())
    }

    async fn load(&self, group: &str, subscription: &str, p: u32) -> Result<Option<u64>, Error> {
        validate_key(group, subscription)?;
        let key = (group.to_owned(), subscription.to_owned(), p);
        Ok(self
            .state()
            .rows
            .get(&key)
            .filter(|row| !row.dead)
            .map(|row| row.position))
    }

    async fn save(
        &self,
        group: &str,
        subscription: &str,
        p: u32,
        position: u64,
    ) -> Result<(), Error> {
        validate_save(group, subscription, position)?;
        self.save_one(&mut self.state(), group, subscription, p, position);
        Ok(())
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        let mut state = self.state();
        for c in checkpoints {
            self.save_one(&mut state, group, &c.subscription, c.partition, c.position);
        }
        Ok(())
    }
}

#[async_trait]
impl ExclusiveCheckpointStore for BrokenAdminStore {
    async fn claim(
        &self,
        group: &str,
        subscription: &str,
        p: u32,
        fingerprint: Fingerprint,
        initial_position: u64,
    ) -> Result<u64, Error> {
        validate_claim(group, subscription, initial_position)?;
        let mut state = self.state();
        if self.flaw != AdminFlaw::ClaimIgnoresTombstone && state.retired(group, subscription) {
            return Err(Error::retired(group, subscription));
        }
        let row = state
            .rows
            .entry((group.to_owned(), subscription.to_owned(), p))
            .or_insert(Row {
                position: initial_position,
                fingerprint: Some(fingerprint),
                dead: false,
            });
        match row.fingerprint {
            Some(stored) if stored != fingerprint => Err(Error::QueryChanged {
                stored,
                requested: fingerprint,
            }),
            _ => {
                row.fingerprint = Some(fingerprint);
                Ok(row.position)
            }
        }
    }

    async fn advance(
        &self,
        group: &str,
        subscription: &str,
        p: u32,
        from: u64,
        to: u64,
    ) -> Result<(), Error> {
        validate_advance(group, subscription, from, to)?;
        let mut state = self.state();
        let key = (group.to_owned(), subscription.to_owned(), p);
        match state.rows.get_mut(&key).filter(|row| !row.dead) {
            Some(row) if row.position == from => {
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

#[async_trait]
impl CheckpointAdmin for BrokenAdminStore {
    async fn groups(&self) -> Result<Vec<String>, Error> {
        let state = self.state();
        let live = state.rows.iter().filter(|(_, row)| !row.dead);
        let retired = state.tombstones.iter().map(|(g, _)| g.clone());
        if self.flaw == AdminFlaw::GroupsUnsortedRepeated {
            let mut groups: Vec<String> = live
                .map(|((g, _, _), _)| g.clone())
                .chain(retired)
                .collect();
            groups.reverse();
            return Ok(groups);
        }
        let groups: BTreeSet<String> = live
            .map(|((g, _, _), _)| g.clone())
            .chain(retired)
            .collect();
        let limit = if self.flaw == AdminFlaw::GroupsTruncates {
            1_000
        } else {
            usize::MAX
        };
        Ok(groups.into_iter().take(limit).collect())
    }

    async fn start_at(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
    ) -> Result<(), Error> {
        validate_start_at(group, subscription, positions)?;
        if self.flaw == AdminFlaw::StartAtChecksThenWrites {
            if self.state().has_rows(group, subscription) {
                return Err(Error::exists(group, subscription));
            }
            // The round trip between the check and the write, where other calls check too.
            tokio::task::yield_now().await;
        }
        let mut state = self.state();
        if state.retired(group, subscription) {
            return Err(Error::retired(group, subscription));
        }
        let checks = !matches!(
            self.flaw,
            AdminFlaw::StartAtOverwrites | AdminFlaw::StartAtChecksThenWrites
        );
        if checks && state.has_rows(group, subscription) {
            return Err(Error::exists(group, subscription));
        }
        for &(p, position) in positions {
            state.rows.insert(
                (group.to_owned(), subscription.to_owned(), p),
                Row {
                    position,
                    fingerprint: None,
                    dead: false,
                },
            );
        }
        Ok(())
    }

    async fn retire(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        let doomed = |g: &str, s: &str| {
            g == group
                && (s == subscription
                    || (self.flaw == AdminFlaw::RetireTakesPrefixes && s.starts_with(subscription)))
        };
        match self.flaw {
            AdminFlaw::TombstoneGuardsOnlyExistingPartitions => {
                let mut state = self.state();
                for ((g, s, _), row) in state.rows.iter_mut() {
                    if doomed(g, s) {
                        row.dead = true;
                    }
                }
                state
                    .tombstones
                    .insert((group.to_owned(), subscription.to_owned()));
            }
            AdminFlaw::RetireDeletesThenTombstones => {
                self.state().rows.retain(|(g, s, _), _| !doomed(g, s));
                // The round trip between the delete and the tombstone, where saves land.
                tokio::task::yield_now().await;
                tokio::task::yield_now().await;
                self.state()
                    .tombstones
                    .insert((group.to_owned(), subscription.to_owned()));
            }
            _ => {
                let mut state = self.state();
                state.rows.retain(|(g, s, _), _| !doomed(g, s));
                if self.flaw != AdminFlaw::RetireLeavesNoTombstone {
                    state
                        .tombstones
                        .insert((group.to_owned(), subscription.to_owned()));
                }
            }
        }
        Ok(())
    }

    async fn retired(&self, group: &str) -> Result<Vec<String>, Error> {
        validate_group(group)?;
        Ok(self
            .state()
            .tombstones
            .iter()
            .filter(|(g, _)| g == group)
            .map(|(_, s)| s.clone())
            .collect())
    }

    async fn purge(&self, group: &str, subscription: &str) -> Result<(), Error> {
        validate_key(group, subscription)?;
        let mut state = self.state();
        let retired = state
            .tombstones
            .remove(&(group.to_owned(), subscription.to_owned()));
        let live = state
            .rows
            .iter()
            .any(|((g, s, _), row)| g == group && s == subscription && !row.dead);
        if live && !retired && self.flaw != AdminFlaw::PurgeDeletesLive {
            return Err(Error::not_retired(group, subscription));
        }
        state
            .rows
            .retain(|(g, s, _), _| !(g == group && s == subscription));
        Ok(())
    }
}
