//! Invalid input of the operations API: rejected with the invalid-input error naming the
//! argument, group first, then subscription, then positions, and nothing done.

use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use checkpoint_core::{Argument, Checkpoint, CheckpointAdmin, Error, InvalidReason};

use super::super::expect_invalid;
use crate::{CaseResult, Failure, ensure, ensure_eq, fresh_group};

/// Fails unless `result` is the invalid-input error for `argument` with `reason`, at batch
/// entry `index`.
fn expect_invalid_entry(
    result: Result<(), Error>,
    argument: Argument,
    reason: InvalidReason,
    index: Option<usize>,
    what: &str,
) -> CaseResult {
    match result {
        Err(Error::InvalidInput(invalid))
            if invalid.argument == argument
                && invalid.reason == reason
                && invalid.batch_index == index =>
        {
            Ok(())
        }
        other => Err(Failure::new(format!(
            "{what}: expected the invalid-input error for the {argument} ({reason:?}) at entry \
             {index:?}, got {other:?}"
        ))),
    }
}

/// Every invalid argument of `start_at`, `retire`, `retired` and `purge` (a name empty, too
/// long, or with a NUL; positions empty, a partition twice, a position above `i64::MAX`) is
/// rejected with the invalid-input error naming it, and nothing is created or retired.
pub async fn admin_invalid_inputs_are_rejected<S: CheckpointAdmin + ?Sized>(
    store: &S,
) -> CaseResult {
    let group = fresh_group("admin-invalid");
    expect_bad_names_rejected(store, &group).await?;
    expect_bad_positions_rejected(store, &group).await?;
    ensure_invalid_calls_did_nothing(store, &group).await?;
    store
        .start_at(&group, "s", &[(0, 1), (1, MAX_POSITION)])
        .await?;
    ensure_eq!(
        store.load(&group, "s", 1).await?,
        Some(MAX_POSITION),
        "load({group:?}, \"s\", 1) after a valid start_at that follows the invalid ones"
    );
    Ok(())
}

/// Every operation taking a name rejects each bad name (empty, too long in bytes, too long
/// once a multibyte character is counted, with a NUL) as the group and as the subscription,
/// naming the argument; the group is checked before the subscription.
async fn expect_bad_names_rejected<S: CheckpointAdmin + ?Sized>(
    store: &S,
    group: &str,
) -> CaseResult {
    let too_long = "n".repeat(MAX_NAME_BYTES + 1);
    let too_long_multibyte = format!("{}é", "n".repeat(MAX_NAME_BYTES - 1));
    for bad in ["", too_long.as_str(), too_long_multibyte.as_str(), "a\0b"] {
        let cases: [(Result<(), Error>, Argument, String); 8] = [
            (
                store.start_at(bad, "s", &[(0, 1)]).await,
                Argument::Group,
                format!("start_at with group {bad:?}"),
            ),
            (
                store.start_at(group, bad, &[(0, 1)]).await,
                Argument::Subscription,
                format!("start_at with subscription {bad:?}"),
            ),
            (
                store.start_at(bad, bad, &[]).await,
                Argument::Group,
                format!("start_at with group and subscription {bad:?} and no positions"),
            ),
            (
                store.retire(bad, "s").await,
                Argument::Group,
                format!("retire with group {bad:?}"),
            ),
            (
                store.retire(group, bad).await,
                Argument::Subscription,
                format!("retire with subscription {bad:?}"),
            ),
            (
                store.retired(bad).await.map(drop),
                Argument::Group,
                format!("retired({bad:?})"),
            ),
            (
                store.purge(bad, "s").await,
                Argument::Group,
                format!("purge with group {bad:?}"),
            ),
            (
                store.purge(group, bad).await,
                Argument::Subscription,
                format!("purge with subscription {bad:?}"),
            ),
        ];
        for (result, argument, what) in cases {
            expect_invalid(result, argument, &what)?;
        }
    }
    Ok(())
}

/// `start_at` with valid names but bad positions (none, a partition twice, a position above
/// the maximum) is rejected with the reason and the index of the first bad entry; an empty
/// subscription is named before the missing positions.
async fn expect_bad_positions_rejected<S: CheckpointAdmin + ?Sized>(
    store: &S,
    group: &str,
) -> CaseResult {
    expect_invalid(
        store.start_at(group, "", &[]).await,
        Argument::Subscription,
        "start_at with an empty subscription and no positions",
    )?;
    expect_invalid_entry(
        store.start_at(group, "s", &[]).await,
        Argument::Positions,
        InvalidReason::Empty,
        None,
        "start_at with no positions",
    )?;
    expect_invalid_entry(
        store.start_at(group, "s", &[(0, 1), (2, 2), (0, 3)]).await,
        Argument::Partition,
        InvalidReason::DuplicatePartition { partition: 0 },
        Some(2),
        "start_at naming partition 0 twice",
    )?;
    let above = MAX_POSITION + 1;
    expect_invalid_entry(
        store.start_at(group, "s", &[(0, 1), (1, above)]).await,
        Argument::Position,
        InvalidReason::PositionOutOfRange {
            value: above,
            max: MAX_POSITION,
        },
        Some(1),
        "start_at with a position above i64::MAX at entry 1",
    )?;
    expect_invalid_entry(
        store.start_at(group, "s", &[(7, u64::MAX), (7, 1)]).await,
        Argument::Position,
        InvalidReason::PositionOutOfRange {
            value: u64::MAX,
            max: MAX_POSITION,
        },
        Some(0),
        "start_at with u64::MAX at entry 0, then partition 7 again",
    )?;
    Ok(())
}

/// After only invalid calls, nothing was created, retired or moved: the group lists no
/// checkpoint, has no retired subscription, and is not among the groups.
async fn ensure_invalid_calls_did_nothing<S: CheckpointAdmin + ?Sized>(
    store: &S,
    group: &str,
) -> CaseResult {
    ensure_eq!(
        store.list(group).await?,
        Vec::<Checkpoint>::new(),
        "list({group:?}) after only invalid calls"
    );
    ensure_eq!(
        store.retired(group).await?,
        Vec::<String>::new(),
        "retired({group:?}) after only invalid calls"
    );
    ensure!(
        store
            .groups()
            .await?
            .binary_search_by(|listed| listed.as_str().cmp(group))
            .is_err(),
        "groups() lists {group:?}, where only invalid calls were made"
    );
    Ok(())
}
