//! The `*_in` family of the SQL family on the caller's transactions, where they race.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_core::transactional::TransactionalStore;
use checkpoint_core::{CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_sql::{Connection, Engine, SqlStore};

use super::SqlServer;
use crate::fresh_group;

/// The loser's advance waits for the winner's row lock, and then reports where the winner
/// really left the position (`Moved { expected: 0, current: Some(50) }`), not the one of its
/// own snapshot. The loser's transaction read position 0 before the winner committed;
/// `plain_read_after` is what a plain `load_in` in it reads after the wait: 0 under
/// `REPEATABLE READ` (MySQL's sessions), 50 under `READ COMMITTED` (PostgreSQL's).
///
/// Not for an engine with one writer (SQLite): the loser's transaction would not wait on a
/// row lock but on the database's.
///
/// # Panics
///
/// When the store does not keep the clause, like a failed test.
#[allow(clippy::unwrap_used)]
pub async fn a_waiting_advance_reports_the_committed_position<E: Engine>(
    server: &impl SqlServer<E>,
    plain_read_after: u64,
) {
    let store = server.store().await;
    let group = fresh_group("tx-waiting");
    let fingerprint = Fingerprint::from_bytes([0x11; 32]);
    let from = store.claim(&group, "p", 0, fingerprint, 0).await.unwrap();

    let mut winner = store.pool().begin().await.unwrap();
    store
        .advance_in(&mut *winner, &group, "p", 0, from, 50)
        .await
        .unwrap();

    let loser = tokio::spawn({
        let store = store.clone();
        let group = group.clone();
        async move {
            let mut transaction = store.pool().begin().await.unwrap();
            let tx = &mut *transaction;
            // The transaction's first read: taken now, with the winner's change not committed.
            let before = store.load_in(tx, &group, "p", 0).await.unwrap();
            let result = store.advance_in(tx, &group, "p", 0, from, 40).await;
            let after = store.load_in(tx, &group, "p", 0).await.unwrap();
            transaction.rollback().await.unwrap();
            (before, result, after)
        }
    });
    // Give the loser time to block on the winner's row lock before the winner commits.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !loser.is_finished(),
        "the loser's advance did not wait for the row lock"
    );
    winner.commit().await.unwrap();

    let (before, result, after) = loser.await.unwrap();
    assert_eq!(before, Some(0));
    assert!(
        matches!(
            result,
            Err(Error::Moved {
                expected: 0,
                current: Some(50)
            })
        ),
        "{result:?}"
    );
    assert_eq!(after, Some(plain_read_after), "a plain read after the wait");
    assert_eq!(store.load(&group, "p", 0).await.unwrap(), Some(50));
}

/// A read model of the test's own beside the store: a table `(id BIGINT PRIMARY KEY, note)`
/// written in the caller's transaction with the checkpoint.
pub trait ReadModels<E: Engine>: SqlServer<E> {
    /// Creates a read-model table reachable from `store`'s connections; its name.
    fn create_read_model(&self, store: &SqlStore<E>) -> impl Future<Output = String> + Send;

    /// Inserts `(id, note)` into `table` on the caller's connection.
    fn write_read_model(
        connection: &mut Connection<E>,
        table: &str,
        id: i64,
        note: &str,
    ) -> impl Future<Output = ()> + Send;

    /// Every row's id, in order, as committed (read outside any test transaction).
    fn read_model_ids(
        &self,
        store: &SqlStore<E>,
        table: &str,
    ) -> impl Future<Output = Vec<i64>> + Send;

    /// Drops the read model.
    fn drop_read_model(&self, store: &SqlStore<E>, table: &str) -> impl Future<Output = ()> + Send;
}

/// Six contenders from two pools race to advance the same step, ten steps, each in its own
/// transaction (begun with the engine's `BEGIN`, as `TransactionalStore` begins it) with its
/// read-model row: exactly one commits per step, every loser is `Moved` from the step to the
/// next, the checkpoint ends at 10 and the read model holds exactly one row per step.
///
/// # Panics
///
/// When the store does not keep the clause, like a failed test.
#[allow(clippy::expect_used)]
pub async fn racing_transactions_commit_exactly_one_winner_per_step<E, S>(server: &S)
where
    E: Engine,
    S: ReadModels<E> + 'static,
{
    let stores = Arc::new([server.store().await, server.store().await]);
    let table: Arc<str> = server.create_read_model(&stores[0]).await.into();
    let group = fresh_group("tx-race");
    let fingerprint = Fingerprint::from_bytes([6; 32]);
    stores[0]
        .claim(&group, "p", 0, fingerprint, 0)
        .await
        .expect("claim");
    let started = Instant::now();
    for step in 0..10u64 {
        let contenders: Vec<_> = (0..6i64)
            .map(|contender| {
                let (stores, table) = (Arc::clone(&stores), Arc::clone(&table));
                let group = group.clone();
                tokio::spawn(async move {
                    let store = &stores[usize::from(contender % 2 == 1)];
                    contend::<E, S>(store, &table, &group, step, contender).await
                })
            })
            .collect();
        let mut winners = 0;
        for contender in contenders {
            if contender.await.expect("contender panicked") {
                winners += 1;
            }
        }
        assert_eq!(winners, 1, "step {step}");
    }
    eprintln!(
        "10 steps of 6 racing transactions on two pools: {:?}",
        started.elapsed()
    );
    assert_eq!(
        stores[0].load(&group, "p", 0).await.expect("load"),
        Some(10)
    );
    let ids = server.read_model_ids(&stores[0], &table).await;
    assert_eq!(ids.len(), 10, "one row per step: {ids:?}");
    for (step, id) in (0..).zip(&ids) {
        assert_eq!(id / 100, step, "one row per step: {ids:?}");
    }
    server.drop_read_model(&stores[0], &table).await;
}

/// One contender of a step: its read-model row and the advance in one transaction; whether
/// it won.
#[allow(clippy::expect_used, clippy::panic)]
async fn contend<E: Engine, S: ReadModels<E>>(
    store: &SqlStore<E>,
    table: &str,
    group: &str,
    step: u64,
    contender: i64,
) -> bool {
    let mut tx = store.begin_transaction().await.expect("begin");
    let id = i64::try_from(step).expect("a small step") * 100 + contender;
    S::write_read_model(&mut tx, table, id, "step").await;
    match store
        .advance_in(&mut tx, group, "p", 0, step, step + 1)
        .await
    {
        Ok(()) => {
            tx.commit().await.expect("commit");
            true
        }
        Err(Error::Moved { expected, current }) => {
            assert_eq!(expected, step);
            assert_eq!(current, Some(step + 1));
            tx.rollback().await.expect("rollback");
            false
        }
        Err(other) => panic!("unexpected error: {other:?}"),
    }
}
