//! One public case per clause of the exclusive contract: claim with a query fingerprint and a
//! compare-and-set advance.

use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use checkpoint_core::{
    Argument, Checkpoint, Error, ExclusiveCheckpointStore, Fingerprint, InvalidReason,
};

use crate::{CaseResult, Failure, ensure, ensure_eq, fresh_group};

/// Two distinct fingerprints, as two different queries would have.
pub const QUERY_A: Fingerprint = Fingerprint::from_bytes([0xa1; 32]);
/// The fingerprint of a changed query.
pub const QUERY_B: Fingerprint = Fingerprint::from_bytes([0xb2; 32]);

pub(super) fn expect_moved(
    result: Result<(), Error>,
    expected: u64,
    current: Option<u64>,
    what: &str,
) -> CaseResult {
    match result {
        Err(Error::Moved {
            expected: e,
            current: c,
        }) if e == expected && c == current => Ok(()),
        other => Err(Failure::new(format!(
            "{what}: expected Moved {{ expected: {expected}, current: {current:?} }}, got {other:?}"
        ))),
    }
}

/// The first claim creates the checkpoint at the initial position.
pub async fn claim_creates_at_initial_position(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("claim-create");
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 25).await?,
        25,
        "first claim"
    );
    ensure_eq!(
        store.load(&group, "projection", 0).await?,
        Some(25),
        "load after the first claim"
    );
    ensure_eq!(
        store.claim(&group, "zero", 4, QUERY_A, 0).await?,
        0,
        "first claim at 0"
    );
    Ok(())
}

/// A later claim returns the stored position and ignores its own initial position.
pub async fn claim_keeps_stored_position(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("claim-keep");
    store.claim(&group, "projection", 0, QUERY_A, 25).await?;
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 0).await?,
        25,
        "claim with a lower initial"
    );
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 900).await?,
        25,
        "claim with a higher initial"
    );
    store.advance(&group, "projection", 0, 25, 30).await?;
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 0).await?,
        30,
        "claim after an advance"
    );
    Ok(())
}

/// A claim under a different query fingerprint is refused with both fingerprints, and changes
/// nothing.
pub async fn claim_refuses_changed_query(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("claim-changed");
    store.claim(&group, "projection", 0, QUERY_A, 5).await?;
    match store.claim(&group, "projection", 0, QUERY_B, 7).await {
        Err(Error::QueryChanged { stored, requested }) => {
            ensure_eq!(stored, QUERY_A, "stored fingerprint in the error");
            ensure_eq!(requested, QUERY_B, "requested fingerprint in the error");
        }
        other => {
            return Err(Failure::new(format!(
                "claim under a changed query: expected QueryChanged, got {other:?}"
            )));
        }
    }
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 0).await?,
        5,
        "claim under the original query afterwards"
    );
    // The fingerprint belongs to one key: another partition may use another query.
    ensure_eq!(
        store.claim(&group, "projection", 1, QUERY_B, 3).await?,
        3,
        "claim of another partition under another query"
    );
    Ok(())
}

/// A claim of a checkpoint that was only ever saved monotonically adopts it: it returns the
/// stored position and stores the fingerprint.
pub async fn claim_adopts_monotonic_checkpoint(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("claim-adopt");
    store.save(&group, "projection", 0, 40).await?;
    ensure_eq!(
        store.claim(&group, "projection", 0, QUERY_A, 0).await?,
        40,
        "claim of a saved checkpoint"
    );
    ensure!(
        matches!(
            store.claim(&group, "projection", 0, QUERY_B, 0).await,
            Err(Error::QueryChanged { .. })
        ),
        "after adoption, a claim under another query must be refused"
    );
    Ok(())
}

/// An advance from the stored position moves it.
pub async fn advance_from_current_position(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("advance");
    store.claim(&group, "projection", 0, QUERY_A, 10).await?;
    store.advance(&group, "projection", 0, 10, 20).await?;
    ensure_eq!(
        store.load(&group, "projection", 0).await?,
        Some(20),
        "load after advance 10 -> 20"
    );
    store.advance(&group, "projection", 0, 20, 21).await?;
    ensure_eq!(
        store.load(&group, "projection", 0).await?,
        Some(21),
        "load after advance 20 -> 21"
    );
    Ok(())
}

/// An advance from a position that is no longer stored is refused with where it is now, and
/// changes nothing; so is an advance of a checkpoint that does not exist.
pub async fn advance_from_stale_position_is_refused(
    store: &dyn ExclusiveCheckpointStore,
) -> CaseResult {
    let group = fresh_group("advance-stale");
    store.claim(&group, "projection", 0, QUERY_A, 10).await?;
    store.advance(&group, "projection", 0, 10, 20).await?;
    expect_moved(
        store.advance(&group, "projection", 0, 10, 30).await,
        10,
        Some(20),
        "advance from a stale 10",
    )?;
    expect_moved(
        store.advance(&group, "projection", 0, 15, 30).await,
        15,
        Some(20),
        "advance from 15, never stored",
    )?;
    expect_moved(
        store.advance(&group, "projection", 0, 25, 30).await,
        25,
        Some(20),
        "advance from ahead of the stored",
    )?;
    ensure_eq!(
        store.load(&group, "projection", 0).await?,
        Some(20),
        "load after refused advances"
    );
    expect_moved(
        store.advance(&group, "absent", 0, 0, 1).await,
        0,
        None,
        "advance of a checkpoint never claimed",
    )?;
    ensure_eq!(
        store.load(&group, "absent", 0).await?,
        None,
        "a refused advance must not create the checkpoint"
    );
    Ok(())
}

/// Exclusive checkpoints are in the same storage as monotonic ones: `list` and `load` show
/// them, and a monotonic save never moves one back.
pub async fn exclusive_checkpoints_are_listed(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("exclusive-list");
    store.claim(&group, "projection", 0, QUERY_A, 3).await?;
    store.advance(&group, "projection", 0, 3, 8).await?;
    store.save(&group, "consumer", 0, 5).await?;
    store.save(&group, "projection", 0, 4).await?;
    let mut listed = store.list(&group).await?;
    listed.sort();
    ensure_eq!(
        listed,
        vec![
            Checkpoint::new("consumer", 0, 5),
            Checkpoint::new("projection", 0, 8)
        ],
        "list of a group with an exclusive and a monotonic checkpoint"
    );
    Ok(())
}

/// Positions of claims and advances are exact over the whole range.
pub async fn exclusive_positions_are_exact(store: &dyn ExclusiveCheckpointStore) -> CaseResult {
    let group = fresh_group("exclusive-exact");
    let near = 1u64 << 53;
    ensure_eq!(
        store.claim(&group, "p", 0, QUERY_A, near).await?,
        near,
        "claim at 2^53"
    );
    expect_moved(
        store.advance(&group, "p", 0, near + 1, near + 2).await,
        near + 1,
        Some(near),
        "advance from 2^53 + 1 when 2^53 is stored",
    )?;
    store.advance(&group, "p", 0, near, near + 1).await?;
    store
        .advance(&group, "p", 0, near + 1, MAX_POSITION)
        .await?;
    ensure_eq!(
        store.load(&group, "p", 0).await?,
        Some(MAX_POSITION),
        "load after advancing to i64::MAX"
    );
    ensure_eq!(
        store.claim(&group, "q", 0, QUERY_A, MAX_POSITION).await?,
        MAX_POSITION,
        "claim at i64::MAX"
    );
    Ok(())
}

/// Invalid claims and advances are rejected with the invalid-input error before any I/O;
/// an advance must move forward.
pub async fn exclusive_invalid_inputs_are_rejected(
    store: &dyn ExclusiveCheckpointStore,
) -> CaseResult {
    let group = fresh_group("exclusive-invalid");
    let too_long = "n".repeat(MAX_NAME_BYTES + 1);
    for bad in ["", too_long.as_str(), "a\0"] {
        ensure!(
            matches!(store.claim(bad, "p", 0, QUERY_A, 0).await, Err(Error::InvalidInput(ref i)) if i.argument == Argument::Group),
            "claim with group {bad:?} must be invalid input"
        );
        ensure!(
            matches!(store.claim(&group, bad, 0, QUERY_A, 0).await, Err(Error::InvalidInput(ref i)) if i.argument == Argument::Subscription),
            "claim with subscription {bad:?} must be invalid input"
        );
        ensure!(
            matches!(store.advance(&group, bad, 0, 0, 1).await, Err(Error::InvalidInput(ref i)) if i.argument == Argument::Subscription),
            "advance with subscription {bad:?} must be invalid input"
        );
    }
    ensure!(
        matches!(store.claim(&group, "p", 0, QUERY_A, MAX_POSITION + 1).await, Err(Error::InvalidInput(ref i)) if i.argument == Argument::InitialPosition),
        "claim at i64::MAX + 1 must be invalid input"
    );
    store.claim(&group, "p", 0, QUERY_A, 5).await?;
    for (from, to) in [(5, 5), (5, 4), (5, 0)] {
        match store.advance(&group, "p", 0, from, to).await {
            Err(Error::InvalidInput(invalid))
                if invalid.reason == (InvalidReason::NotAhead { from, to }) => {}
            other => {
                return Err(Failure::new(format!(
                    "advance {from} -> {to}: expected NotAhead, got {other:?}"
                )));
            }
        }
    }
    ensure!(
        matches!(store.advance(&group, "p", 0, 5, MAX_POSITION + 1).await, Err(Error::InvalidInput(ref i)) if i.argument == Argument::To),
        "advance to i64::MAX + 1 must be invalid input"
    );
    ensure_eq!(
        store.load(&group, "p", 0).await?,
        Some(5),
        "load after invalid advances"
    );
    ensure_eq!(
        store.list(&group).await?.len(),
        1,
        "invalid claims must create nothing"
    );
    Ok(())
}
