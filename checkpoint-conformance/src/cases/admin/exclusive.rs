//! The exclusive mode on a retired subscription: a claim is refused as retired, an advance
//! finds the checkpoint absent, and neither brings anything back.

use checkpoint_core::{CheckpointAdmin, ExclusiveCheckpointStore};

use super::super::exclusive::{QUERY_A, QUERY_B, expect_moved};
use super::super::{expect_stored, expected, listed};
use super::{Refusal, expect_gone, expect_refused};
use crate::{CaseResult, fresh_group};

/// `claim` under a retired name fails with
/// [`Error::Retired`](checkpoint_core::Error::Retired), on a partition it claimed before, on
/// one it never claimed, and on a name retired before it ever claimed; it creates nothing.
pub async fn claim_of_a_retired_subscription_is_refused<S>(store: &S) -> CaseResult
where
    S: ExclusiveCheckpointStore + CheckpointAdmin + ?Sized,
{
    let group = fresh_group("claim-retired");
    store.claim(&group, "projection", 0, QUERY_A, 10).await?;
    store.retire(&group, "projection").await?;
    store.retire(&group, "ghost").await?;
    let claims = [
        (
            "projection",
            0,
            "claim of a partition claimed before the retire",
        ),
        ("projection", 1, "claim of a partition never claimed"),
        (
            "ghost",
            0,
            "claim under a name retired before it ever claimed",
        ),
    ];
    for (subscription, partition, what) in claims {
        let refused = store
            .claim(&group, subscription, partition, QUERY_A, 5)
            .await;
        expect_gone(store, &group, subscription, &[0, 1], what).await?;
        expect_refused(refused, Refusal::Retired, &group, subscription, what)?;
    }
    let refused = store.claim(&group, "projection", 0, QUERY_B, 5).await;
    expect_refused(
        refused,
        Refusal::Retired,
        &group,
        "projection",
        "claim of a retired subscription under another query",
    )?;
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &expected([]),
        "list after claims under retired names",
    )
}

/// `advance` of a retired subscription fails with
/// [`Error::Moved`](checkpoint_core::Error::Moved) whose current position is absent, from the
/// position it had and on a partition it never had, and brings nothing back.
pub async fn advance_of_a_retired_subscription_is_moved_absent<S>(store: &S) -> CaseResult
where
    S: ExclusiveCheckpointStore + CheckpointAdmin + ?Sized,
{
    let group = fresh_group("advance-retired");
    store.claim(&group, "projection", 0, QUERY_A, 10).await?;
    store.advance(&group, "projection", 0, 10, 12).await?;
    store.retire(&group, "projection").await?;
    let moved = store.advance(&group, "projection", 0, 12, 20).await;
    expect_gone(
        store,
        &group,
        "projection",
        &[0, 3],
        "after an advance of a retired subscription",
    )
    .await?;
    expect_moved(
        moved,
        12,
        None,
        "advance of a retired subscription from where it stood",
    )?;
    expect_moved(
        store.advance(&group, "projection", 3, 0, 1).await,
        0,
        None,
        "advance of a retired subscription on a partition it never had",
    )?;
    expect_stored(
        &group,
        &listed(store, &group).await?,
        &expected([]),
        "list after advances of a retired subscription",
    )
}
