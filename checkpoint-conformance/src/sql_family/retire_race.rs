//! A retire racing zombies: from the moment `retire` returns, nothing of the retired
//! subscription is ever visible, however many writers go on saving it.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use checkpoint_core::{
    Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
};
use checkpoint_sql::{Engine, SqlStore};

use super::SqlServer;
use crate::fresh_group;

const FINGERPRINT: Fingerprint = Fingerprint::from_bytes([0x3c; 32]);

/// What an engine's tests give the retire race: stores on tables of the test's own.
pub trait OwnTables<E: Engine>: SqlServer<E> {
    /// A migrated store on a table of its own named after `prefix`, on a pool of at least
    /// `connections` connections (or the engine's default pool where the zombies have pools
    /// of their own, [`RetireRace::own_pools`]).
    fn store_on_own_table(
        &self,
        prefix: &str,
        connections: u32,
    ) -> impl Future<Output = SqlStore<E>> + Send;

    /// A store on a pool of its own (as another process would have) on `table`, not migrated.
    fn store_on(&self, table: &str) -> impl Future<Output = SqlStore<E>> + Send;

    /// The server's count of deadlocks since it started (all clients), if it keeps one.
    fn deadlocks(&self) -> impl Future<Output = Option<u64>> + Send;

    /// Closes `store`'s pool and drops every table of it.
    fn drop_tables(&self, store: SqlStore<E>) -> impl Future<Output = ()> + Send;
}

/// How an engine runs the retire race.
#[derive(Clone, Copy, Debug)]
pub struct RetireRace {
    /// How many rounds, each on a fresh group.
    pub rounds: usize,
    /// How many zombies per round.
    pub workers: u32,
    /// Whether each zombie has a pool of its own ([`OwnTables::store_on`]), or all share the
    /// test's store.
    pub own_pools: bool,
    /// How long the zombies run before the retire in round `r`: `base + (r % 7) * step` ms.
    pub settle_ms: (u64, u64),
    /// How long the zombies go on after the retire returned.
    pub after_retire: Duration,
    /// Whether a zombie's transaction of two `save_in`s may be a deadlock's victim (a
    /// retryable error, which the caller sees and rolls back: InnoDB), or must always commit.
    pub deadlock_victims: bool,
}

/// What the zombies of one round share.
struct Round {
    group: String,
    new_partition: AtomicU32,
    retired: AtomicBool,
    stop: AtomicBool,
    /// Calls that started after retire had returned (all must have been ignored).
    after_retire: AtomicU64,
    /// The longest a call took while the retire ran, in microseconds.
    slowest_us: AtomicU64,
    /// Zombie transactions rolled back as a deadlock's victim.
    deadlocked: AtomicU64,
}

/// One zombie: saves, batches, claims and saves in its own transaction, to partitions that
/// exist (0..8) and to new ones, until `stop`. Every save must succeed; a claim that starts
/// after the retire returned must fail with `Retired`.
#[allow(clippy::unwrap_used, clippy::panic)]
async fn zombie<E: Engine>(store: SqlStore<E>, worker: u32, round: Arc<Round>, victims: bool) {
    let group = round.group.as_str();
    let (mut position, mut step) = (10, 0u32);
    while !round.stop.load(Ordering::Relaxed) {
        position += 1;
        step += 1;
        let after = round.retired.load(Ordering::SeqCst);
        let started = Instant::now();
        let existing = (worker + step) % 8;
        let fresh = round.new_partition.fetch_add(1, Ordering::Relaxed);
        match step % 5 {
            0 => store
                .save(group, "zombie", existing, position)
                .await
                .unwrap(),
            1 => store.save(group, "zombie", fresh, position).await.unwrap(),
            2 => {
                let batch = [
                    Checkpoint::new("zombie", existing, position),
                    Checkpoint::new("zombie", fresh, position),
                    Checkpoint::new("other", worker, position),
                ];
                store.save_all(group, &batch).await.unwrap();
            }
            3 => match store
                .claim(group, "zombie", fresh, FINGERPRINT, position)
                .await
            {
                Ok(_) => assert!(!after, "a claim after the retire succeeded"),
                Err(Error::Retired { .. }) => {}
                Err(other) => panic!("claim: {other:?}"),
            },
            _ => {
                let mut transaction = store.pool().begin().await.unwrap();
                let tx = &mut *transaction;
                let saved = match store.save_in(tx, group, "zombie", fresh, position).await {
                    Ok(()) => store.save_in(tx, group, "zombie", existing, position).await,
                    Err(error) => Err(error),
                };
                match saved {
                    Ok(()) => transaction.commit().await.unwrap(),
                    Err(error) if victims && error.is_retryable() => {
                        round.deadlocked.fetch_add(1, Ordering::Relaxed);
                        transaction.rollback().await.unwrap();
                    }
                    Err(error) => panic!("save_in: {error:?}"),
                }
            }
        }
        let took = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        round.slowest_us.fetch_max(took, Ordering::Relaxed);
        if after {
            round.after_retire.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// What the rounds measured.
#[derive(Default)]
struct Totals {
    retire_times: Vec<Duration>,
    slowest: Duration,
    ignored_after: u64,
    deadlocked: u64,
}

/// The window a save would have without retire's lock: its read taken before the retire
/// commits, its insert after. Zombies hammer new and existing partitions of one subscription
/// while it is retired, round after round; from the moment `retire` returns nothing of it is
/// ever visible (listed, loaded, or counted in the table by the test), and the other
/// subscription's saves in the same batches keep landing. Needs a runtime of several workers.
///
/// # Panics
///
/// When the store does not keep the clause, like a failed test.
#[allow(clippy::unwrap_used)]
pub async fn a_retire_racing_zombies_on_new_and_existing_partitions_leaves_nothing<E: Engine>(
    server: &impl OwnTables<E>,
    race: RetireRace,
) {
    let store = server.store_on_own_table("cp_rr", race.workers + 4).await;
    let deadlocks_before = server.deadlocks().await;
    let mut totals = Totals::default();
    for round in 0..race.rounds {
        run_round(server, &store, &race, round, &mut totals).await;
    }
    let counted = match (deadlocks_before, server.deadlocks().await) {
        (Some(before), Some(after)) => {
            format!(
                "; the server counted {} deadlocks meanwhile (server-wide)",
                after - before
            )
        }
        _ => String::new(),
    };
    let times = &mut totals.retire_times;
    times.sort();
    eprintln!(
        "retire under {} zombies (own pools: {}), {} rounds: median {:?}, max {:?}; slowest \
         zombie call while a retire ran {:?}; {} zombie calls after a retire, all ignored; {} \
         zombie transactions were deadlock victims{counted}",
        race.workers,
        race.own_pools,
        race.rounds,
        times[times.len() / 2],
        times[times.len() - 1],
        totals.slowest,
        totals.ignored_after,
        totals.deadlocked,
    );
    server.drop_tables(store).await;
}

/// One round of the race on a fresh group, its measures added to `totals`.
#[allow(clippy::unwrap_used)]
async fn run_round<E: Engine>(
    server: &impl OwnTables<E>,
    store: &SqlStore<E>,
    race: &RetireRace,
    index: usize,
    totals: &mut Totals,
) {
    let group = fresh_group("retire-race");
    let seed: Vec<Checkpoint> = (0..8).map(|p| Checkpoint::new("zombie", p, 10)).collect();
    store.save_all(&group, &seed).await.unwrap();
    let round = Arc::new(Round {
        group: group.clone(),
        new_partition: AtomicU32::new(1_000),
        retired: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        after_retire: AtomicU64::new(0),
        slowest_us: AtomicU64::new(0),
        deadlocked: AtomicU64::new(0),
    });
    let mut zombies = Vec::new();
    for worker in 0..race.workers {
        let zombie_store = if race.own_pools {
            server.store_on(&store.table()).await
        } else {
            store.clone()
        };
        let task = zombie(
            zombie_store.clone(),
            worker,
            Arc::clone(&round),
            race.deadlock_victims,
        );
        zombies.push((zombie_store, tokio::spawn(task)));
    }
    let (base, step) = race.settle_ms;
    tokio::time::sleep(Duration::from_millis(base + (index as u64 % 7) * step)).await;
    round.slowest_us.store(0, Ordering::Relaxed);
    let started = Instant::now();
    store.retire(&group, "zombie").await.unwrap();
    totals.retire_times.push(started.elapsed());
    round.retired.store(true, Ordering::SeqCst);
    let slowest = Duration::from_micros(round.slowest_us.load(Ordering::Relaxed));
    totals.slowest = totals.slowest.max(slowest);

    let gone = |listed: &[Checkpoint]| listed.iter().all(|c| c.subscription != "zombie");
    let listed = store.list(&group).await.unwrap();
    assert!(gone(&listed), "round {index}: {listed:?}");
    tokio::time::sleep(race.after_retire).await; // the zombies go on
    let listed = store.list(&group).await.unwrap();
    assert!(gone(&listed), "round {index}: {listed:?}");
    round.stop.store(true, Ordering::Relaxed);
    for (zombie_store, task) in zombies {
        task.await.unwrap();
        if race.own_pools {
            zombie_store.pool().close().await;
        }
    }
    assert_nothing_left(server, store, &round, index).await;
    totals.ignored_after += round.after_retire.load(Ordering::Relaxed);
    totals.deadlocked += round.deadlocked.load(Ordering::Relaxed);
}

/// After the zombies stopped: nothing of the retired subscription listed, loaded or in the
/// table; the other subscription saved; a zombie call came after the retire.
#[allow(clippy::unwrap_used)]
async fn assert_nothing_left<E: Engine>(
    server: &impl OwnTables<E>,
    store: &SqlStore<E>,
    round: &Round,
    index: usize,
) {
    let group = round.group.as_str();
    let listed = store.list(group).await.unwrap();
    assert!(
        listed.iter().all(|c| c.subscription != "zombie"),
        "round {index}: {listed:?}"
    );
    let last = round.new_partition.load(Ordering::Relaxed) - 1;
    for partition in [0, 7, 1_000, last] {
        assert_eq!(
            store.load(group, "zombie", partition).await.unwrap(),
            None,
            "round {index}, partition {partition}"
        );
    }
    // The other subscription of the same batches was saved all along, and the table holds
    // nothing beyond what the store lists.
    assert!(listed.iter().any(|c| c.subscription == "other"));
    let listed_rows = i64::try_from(listed.len()).unwrap();
    assert_eq!(server.rows_of(store, group).await, listed_rows);
    assert_eq!(store.retired(group).await.unwrap(), ["zombie"]);
    let after = round.after_retire.load(Ordering::Relaxed);
    assert!(after > 0, "round {index}: no zombie call after the retire");
}
