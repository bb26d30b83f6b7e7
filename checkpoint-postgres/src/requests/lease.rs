//! [`LeaseStore`](checkpoint_core::LeaseStore)'s requests: one statement each, judged by the
//! server's clock (`now()` of the statement), on `<table>_leases` and `<table>_owners`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use checkpoint_core::backoff::{Backoff, Jitter};
use checkpoint_core::{
    Acquired, Error, HeldLease, Lease, LeaseOwner, LeaseTable, Operation, Released, UnexpectedValue,
};
use checkpoint_sql::lease::LeaseKey;
use sqlx::postgres::PgConnection;

use super::{Requests, sql};
use crate::BACKEND;
use crate::PostgresEngine;
use crate::error::backend;
use crate::layout::{COLUMNS, duration_to_db, epoch, time_left};
use checkpoint_sql::requests::Leases;

/// The ceiling of the pause before an `acquire` that reported contention runs again, the first
/// time; it doubles with every run up to [`LONGEST_PAUSE`] (see [`contended_backoff`]).
const FIRST_PAUSE: Duration = Duration::from_millis(1);

/// The longest pause between two runs of a contended `acquire`.
const LONGEST_PAUSE: Duration = Duration::from_millis(20);

/// The pauses between the runs of a contended `acquire`: from [`FIRST_PAUSE`] doubling to
/// [`LONGEST_PAUSE`], with full jitter. Contention means two statements refused each other over
/// one heartbeat; were both to wait the same pause they would meet again at the same instant,
/// so the pause is drawn anywhere under the ceiling, not merely close to it.
fn contended_backoff() -> Backoff {
    Backoff::new(FIRST_PAUSE, LONGEST_PAUSE).with_jitter(Jitter::Full)
}

/// How long at most an `acquire` keeps running again while it reports contention: the lock on
/// an expired heartbeat is held by one statement at a time (its owner's acquire, a renew or
/// leave that started before it expired, another taker's), usually for a millisecond or two,
/// but until its commit is flushed, which a busy server can stretch to hundreds.
const CONTENDED_PATIENCE: Duration = Duration::from_secs(1);

/// How long an `acquire` of leases for `duration` keeps running again while it reports
/// contention: [`CONTENDED_PATIENCE`], or a quarter of `duration` when that is shorter (the
/// caller's local deadline counts from when it sent the acquire, so every millisecond spent
/// here is one less of the leases it holds), or half of the store's `timeout` (so that the
/// last run still has time to answer).
fn contended_patience(duration: Duration, timeout: Option<Duration>) -> Duration {
    let patience = CONTENDED_PATIENCE.min(duration / 4);
    timeout.map_or(patience, |timeout| patience.min(timeout / 2))
}

/// The leases a statement wrote, as three arrays in partition order: partitions, epochs,
/// handover requests.
type HeldArrays = (Vec<i64>, Vec<i64>, Vec<Option<String>>);

/// A row of `sql/leases.sql`: a lease (partition, owner, generation, epoch, handover request)
/// or a live owner (owner, generation, microseconds left).
type LeaseRow = (
    Option<i64>,
    String,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
);

/// The table from the rows of `sql/leases.sql`: the live owners, and the leases whose owner is
/// live under the generation they were granted under, with that owner's time left.
fn lease_table(rows: Vec<LeaseRow>) -> Result<LeaseTable, Error> {
    let mut live: HashMap<String, (Option<i64>, Duration)> = HashMap::new();
    let mut leases = Vec::new();
    let mut table = LeaseTable::default();
    for (partition, owner, generation, stored_epoch, micros_left, requested) in rows {
        match (partition, stored_epoch, micros_left) {
            (Some(partition), Some(stored_epoch), _) => {
                leases.push((partition, owner, generation, stored_epoch, requested));
            }
            (None, _, Some(micros_left)) => {
                let time_left = time_left(Operation::Leases, micros_left)?;
                live.insert(owner.clone(), (generation, time_left));
                table.owners.push(LeaseOwner {
                    owner,
                    time_left: Some(time_left),
                });
            }
            _ => {
                return Err(UnexpectedValue::new(
                    "leases row",
                    "a row that is neither a lease nor a live owner",
                )
                .into_error(BACKEND, Operation::Leases));
            }
        }
    }
    for (partition, owner, generation, stored_epoch, handover_requested_by) in leases {
        let Some(&(live_generation, time_left)) = live.get(&owner) else {
            continue;
        };
        // A heartbeat's generation is never null; a lease's is when no heartbeat holds it,
        // which then matches none.
        if live_generation != generation {
            continue;
        }
        table.leases.push(Lease {
            partition: COLUMNS.partition(Operation::Leases, partition)?,
            owner,
            epoch: epoch(Operation::Leases, stored_epoch)?,
            time_left: Some(time_left),
            handover_requested_by,
        });
    }
    Ok(table)
}

impl Leases<PostgresEngine> for Requests {
    /// Grants what is free, renews what the owner holds; [`Error::Retired`] for a tombstone.
    ///
    /// While the statement reports that it refused a partition only because it could not end
    /// the expired holder's heartbeat (locked by another statement, or changed since its
    /// snapshot: see `sql/acquire.sql`), it runs again after a random pause
    /// ([`contended_backoff`]: under [`FIRST_PAUSE`] doubling to [`LONGEST_PAUSE`]): the lock
    /// lasts one statement, and the lease is most likely free. The statement is idempotent
    /// (what a run granted, the next one finds held and keeps its epoch). After
    /// [`contended_patience`] (at most 1 s, a quarter of `duration`, half of the store's
    /// `timeout`) the refusal stands.
    async fn acquire(
        &self,
        connection: &mut PgConnection,
        key: LeaseKey<'_>,
        partitions: &[u32],
        duration: Duration,
        timeout: Option<Duration>,
    ) -> Result<Acquired, Error> {
        let LeaseKey {
            group,
            subscription,
            ..
        } = key;
        let mut asked = partitions.to_vec();
        // Rows are locked in partition order, whoever asks (see `sql/acquire.sql`).
        asked.sort_unstable();
        let requested: Vec<i64> = asked.iter().copied().map(i64::from).collect();
        let (started, patience) = (Instant::now(), contended_patience(duration, timeout));
        let backoff = contended_backoff();
        let mut runs = 0;
        let (retired, arrays) = loop {
            let (retired, contended, arrays) = self
                .acquire_once(&mut *connection, key, &requested, duration)
                .await?;
            // The pause is drawn before the patience check, so that the check judges the
            // pause actually slept, not its ceiling.
            let pause = backoff.delay(runs);
            if !contended || started.elapsed() + pause > patience {
                break (retired, arrays);
            }
            tokio::time::sleep(pause).await;
            runs += 1;
        };
        if retired {
            return Err(Error::retired(group, subscription));
        }
        let granted = held(Operation::Acquire, arrays)?;
        let refused = asked
            .into_iter()
            .filter(|&partition| {
                granted
                    .binary_search_by_key(&partition, |lease| lease.partition)
                    .is_err()
            })
            .collect();
        Ok(Acquired { granted, refused })
    }

    /// Extends the heartbeat and every live lease of the owner; [`Error::NotHeld`] when the
    /// heartbeat is not live, [`Error::Retired`] for a tombstone.
    async fn renew(
        &self,
        connection: &mut PgConnection,
        key: LeaseKey<'_>,
        duration: Duration,
    ) -> Result<Vec<HeldLease>, Error> {
        let LeaseKey {
            group,
            subscription,
            owner,
        } = key;
        let (retired, live, partitions, epochs, handovers): (
            bool,
            bool,
            Vec<i64>,
            Vec<i64>,
            Vec<Option<String>>,
        ) = sqlx::query_as(sql(&self.renew))
            .bind(group)
            .bind(subscription)
            .bind(owner)
            .bind(duration_to_db(duration))
            .fetch_one(connection)
            .await
            .map_err(|error| backend(Operation::Renew, error))?;
        if retired {
            return Err(Error::retired(group, subscription));
        }
        if !live {
            return Err(Error::not_held(group, subscription, owner));
        }
        held(Operation::Renew, (partitions, epochs, handovers))
    }

    /// Frees the named partitions the owner holds live.
    async fn release(
        &self,
        connection: &mut PgConnection,
        key: LeaseKey<'_>,
        partitions: &[u32],
    ) -> Result<Released, Error> {
        let LeaseKey {
            group,
            subscription,
            owner,
        } = key;
        let mut requested: Vec<i64> = partitions.iter().copied().map(i64::from).collect();
        // Rows are locked in partition order (see `sql/release.sql`).
        requested.sort_unstable();
        let freed: Vec<i64> = sqlx::query_scalar(sql(&self.release))
            .bind(group)
            .bind(subscription)
            .bind(owner)
            .bind(&requested)
            .fetch_one(connection)
            .await
            .map_err(|error| backend(Operation::Release, error))?;
        let released = partition_list(Operation::Release, &freed)?;
        let mut not_held: Vec<u32> = partitions
            .iter()
            .copied()
            .filter(|partition| released.binary_search(partition).is_err())
            .collect();
        not_held.sort_unstable();
        Ok(Released { released, not_held })
    }

    /// Ends the owner's heartbeat and frees every lease it holds live.
    async fn leave(
        &self,
        connection: &mut PgConnection,
        key: LeaseKey<'_>,
    ) -> Result<Vec<u32>, Error> {
        let LeaseKey {
            group,
            subscription,
            owner,
        } = key;
        let freed: Vec<i64> = sqlx::query_scalar(sql(&self.leave))
            .bind(group)
            .bind(subscription)
            .bind(owner)
            .fetch_one(connection)
            .await
            .map_err(|error| backend(Operation::Leave, error))?;
        partition_list(Operation::Leave, &freed)
    }

    /// The live leases and live owners of the subscription (the front records their number
    /// as the span's `count`).
    async fn leases(
        &self,
        connection: &mut PgConnection,
        group: &str,
        subscription: &str,
    ) -> Result<LeaseTable, Error> {
        let rows: Vec<LeaseRow> = sqlx::query_as(sql(&self.leases))
            .bind(group)
            .bind(subscription)
            .fetch_all(connection)
            .await
            .map_err(|error| backend(Operation::Leases, error))?;
        let table = lease_table(rows)?;
        Ok(table)
    }

    /// Marks the named partitions another owner holds live as asked for by `requester`.
    async fn request_handover(
        &self,
        connection: &mut PgConnection,
        key: LeaseKey<'_>,
        partitions: &[u32],
    ) -> Result<(), Error> {
        let LeaseKey {
            group,
            subscription,
            owner: requester,
        } = key;
        let requested: Vec<i64> = partitions.iter().copied().map(i64::from).collect();
        sqlx::query(sql(&self.request_handover))
            .bind(group)
            .bind(subscription)
            .bind(requester)
            .bind(&requested)
            .execute(connection)
            .await
            .map_err(|error| backend(Operation::RequestHandover, error))?;
        Ok(())
    }
}

impl Requests {
    /// One run of `sql/acquire.sql` for the sorted partitions `requested`: whether the
    /// subscription is retired, whether a refusal was only contention (see
    /// [`acquire`](Self::acquire)), and the leases held.
    async fn acquire_once(
        &self,
        connection: &mut PgConnection,
        LeaseKey {
            group,
            subscription,
            owner,
        }: LeaseKey<'_>,
        requested: &[i64],
        duration: Duration,
    ) -> Result<(bool, bool, HeldArrays), Error> {
        let (retired, contended, partitions, epochs, handovers): (
            bool,
            bool,
            Vec<i64>,
            Vec<i64>,
            Vec<Option<String>>,
        ) = sqlx::query_as(sql(&self.acquire))
            .bind(group)
            .bind(subscription)
            .bind(owner)
            .bind(requested)
            .bind(duration_to_db(duration))
            .fetch_one(connection)
            .await
            .map_err(|error| backend(Operation::Acquire, error))?;
        Ok((retired, contended, (partitions, epochs, handovers)))
    }
}

/// The leases a statement returned as arrays, read back (already in partition order).
fn held(operation: Operation, arrays: HeldArrays) -> Result<Vec<HeldLease>, Error> {
    let (partitions, epochs, handovers) = arrays;
    partitions
        .into_iter()
        .zip(epochs)
        .zip(handovers)
        .map(|((partition, stored_epoch), handover_requested_by)| {
            Ok(HeldLease {
                partition: COLUMNS.partition(operation, partition)?,
                epoch: epoch(operation, stored_epoch)?,
                handover_requested_by,
            })
        })
        .collect()
}

/// Partitions a statement returned (already sorted), read back.
fn partition_list(operation: Operation, partitions: &[i64]) -> Result<Vec<u32>, Error> {
    partitions
        .iter()
        .map(|&partition| COLUMNS.partition(operation, partition))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contended_patience_is_the_shortest_of_its_bounds() {
        let minute = Duration::from_secs(60);
        assert_eq!(contended_patience(minute, None), CONTENDED_PATIENCE);
        assert_eq!(
            contended_patience(minute, Some(Duration::from_secs(5))),
            CONTENDED_PATIENCE
        );
        assert_eq!(
            contended_patience(Duration::from_millis(1500), Some(Duration::from_secs(5))),
            Duration::from_millis(375)
        );
        assert_eq!(
            contended_patience(minute, Some(Duration::from_millis(300))),
            Duration::from_millis(150)
        );
    }
}
