//! The `*_in` family of the SQL family on the caller's transactions, where they race.

use std::time::Duration;

use checkpoint_core::{CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_sql::Engine;

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
