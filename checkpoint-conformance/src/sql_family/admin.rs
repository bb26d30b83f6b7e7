//! The operations API of the SQL family beyond the kit's `admin_store_tests!`: a tombstone in
//! the caller's transaction.

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
