//! The operations API of the SQL family beyond the kit's `admin_store_tests!`: a tombstone in
//! the caller's transaction, start_at racing saves.

use std::time::{Duration, Instant};

use checkpoint_core::{
    Checkpoint, CheckpointAdmin, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint,
};
use checkpoint_sql::Engine;

use super::SqlServer;
use crate::fresh_group;

const FINGERPRINT: Fingerprint = Fingerprint::from_bytes([7; 32]);

/// The `*_in` family on a retired subscription, in the caller's transaction: saves are
/// ignored, loads see nothing, a claim is `Retired`, an advance `Moved` with nothing stored,
/// and after the commit only the live subscription's row and the tombstone are left.
///
/// # Panics
///
/// When the store does not keep the clause, like a failed test.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn the_in_family_obeys_the_tombstone<E: Engine>(server: &impl SqlServer<E>) {
    let store = server.store().await;
    let group = fresh_group("retired-in");
    store.claim(&group, "s", 0, FINGERPRINT, 5).await.unwrap();
    store.retire(&group, "s").await.unwrap();
    let mut transaction = store.pool().begin().await.unwrap();
    let tx = &mut *transaction;
    store.save_in(tx, &group, "s", 0, 9).await.unwrap();
    let batch = [Checkpoint::new("s", 1, 9), Checkpoint::new("live", 1, 9)];
    store.save_all_in(tx, &group, &batch).await.unwrap();
    let claimed = store.claim_in(tx, &group, "s", 2, FINGERPRINT, 0).await;
    assert!(matches!(claimed, Err(Error::Retired { .. })), "{claimed:?}");
    let advanced = store.advance_in(tx, &group, "s", 0, 5, 6).await;
    assert!(
        matches!(advanced, Err(Error::Moved { current: None, .. })),
        "{advanced:?}"
    );
    assert_eq!(store.load_in(tx, &group, "s", 0).await.unwrap(), None);
    assert_eq!(
        store.list_in(tx, &group).await.unwrap(),
        [Checkpoint::new("live", 1, 9)]
    );
    transaction.commit().await.unwrap();
    assert_eq!(
        store.list(&group).await.unwrap(),
        [Checkpoint::new("live", 1, 9)]
    );
    // The live row; the tombstone lives in a table of its own.
    assert_eq!(server.rows_of(&store, &group).await, 1);
}

/// start_at racing saves under the same name, 40 rounds: it creates every partition or none,
/// and never moves a checkpoint that a save created (the save's row makes it refuse whole, as
/// `Exists`). For a runtime of several workers (the save runs in a task of its own).
///
/// # Panics
///
/// When the store does not keep the clause, like a failed test.
#[allow(clippy::unwrap_used, clippy::panic)]
pub async fn start_at_racing_saves_is_all_or_nothing_and_moves_nothing<E: Engine>(
    server: &impl SqlServer<E>,
) {
    let store = server.store().await;
    let mut refused = 0;
    let started = Instant::now();
    for round in 0..40u64 {
        let group = fresh_group("start-race");
        let positions: Vec<(u32, u64)> = (0..16).map(|p| (p, 1_000)).collect();
        let saver = {
            let (store, group) = (store.clone(), group.clone());
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_micros(200 * (round % 10))).await;
                store.save(&group, "s", 9, 5).await.unwrap();
            })
        };
        let outcome = store.start_at(&group, "s", &positions).await;
        saver.await.unwrap();
        let mut listed = store.list(&group).await.unwrap();
        listed.sort();
        match outcome {
            Ok(()) => {
                // The save came after: it is behind, so partition 9 stays where start_at put it.
                let expected: Vec<Checkpoint> =
                    (0..16).map(|p| Checkpoint::new("s", p, 1_000)).collect();
                assert_eq!(listed, expected, "round {round}");
            }
            Err(Error::Exists { .. }) => {
                refused += 1;
                assert_eq!(listed, [Checkpoint::new("s", 9, 5)], "round {round}");
            }
            Err(other) => panic!("round {round}: {other:?}"),
        }
    }
    eprintln!(
        "start_at racing a save: {refused} of 40 refused as Exists, in {:?}",
        started.elapsed()
    );
}
