//! Parked entries ([`ParkedStore`]): what a subscription records about an entry its handler
//! failed on every retry. Listed sorted and per group, parked again in place, marked for retry,
//! removed, kept verbatim at the extremes, invalid input rejected before any I/O.

use std::time::{Duration, UNIX_EPOCH};

use checkpoint_core::Argument;
use checkpoint_core::parked::{MAX_ERROR_BYTES, ParkedEntry, ParkedStore};
use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};

use super::expect_invalid;
use crate::{CaseResult, ensure, ensure_eq, fresh_group};

/// A parked entry with a chosen time, so that what a store returns compares exactly.
fn entry(subscription: &str, partition: u32, position: u64, error: &str) -> ParkedEntry {
    let mut entry = ParkedEntry::new(subscription, partition, position, error, 3);
    entry.parked_at = UNIX_EPOCH + Duration::from_millis(1_764_000_000_123 + position % 1000);
    entry
}

/// `parked` returns every entry of the group with every field as parked, sorted by
/// subscription (by bytes), partition and position, whatever order they were parked in.
pub async fn parked_entries_are_listed_sorted<S: ParkedStore + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("parked-sorted");
    ensure_eq!(
        store.parked(&group).await?,
        vec![],
        "parked() of a new group"
    );
    let entries = [
        entry("orders", 2, 7, "timeout"),
        entry("Orders", 0, 1, "upper case sorts first"),
        entry("orders", 0, 900, "no such customer: «Zoë»"),
        entry("orders", 0, 12, ""),
        entry("audit", 5, 0, "line one\nline two"),
        entry("orders", 10, 3, "partition 10 after 2"),
    ];
    for parked in &entries {
        store.park(&group, parked).await?;
    }
    let mut want = entries.to_vec();
    want.sort_by(|a, b| {
        (a.subscription.as_bytes(), a.partition, a.position).cmp(&(
            b.subscription.as_bytes(),
            b.partition,
            b.position,
        ))
    });
    ensure_eq!(
        store.parked(&group).await?,
        want,
        "parked() after six parks"
    );
    Ok(())
}

/// Parking an entry that is parked already replaces its error, attempts and time, and clears
/// its retry request; it never adds a second record.
pub async fn parking_again_replaces_the_record<S: ParkedStore + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("parked-again");
    store.park(&group, &entry("orders", 1, 5, "first")).await?;
    ensure!(
        store.retry_parked(&group, "orders", 1, 5).await?,
        "retry_parked of a parked entry said it was not parked"
    );
    let mut again = entry("orders", 1, 5, "second failure");
    again.attempts = 8;
    again.parked_at += Duration::from_secs(60);
    store.park(&group, &again).await?;
    ensure_eq!(
        store.parked(&group).await?,
        vec![again],
        "parked() after parking the same entry twice (retry requested in between)"
    );
    Ok(())
}

/// `retry_parked` marks that entry and no other, and says whether it was parked.
pub async fn retry_parked_marks_only_that_entry<S: ParkedStore + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("parked-retry");
    let entries = [
        entry("orders", 0, 4, "a"),
        entry("orders", 0, 5, "b"),
        entry("orders", 1, 4, "c"),
        entry("order", 0, 4, "d"),
    ];
    for parked in &entries {
        store.park(&group, parked).await?;
    }
    ensure!(
        store.retry_parked(&group, "orders", 0, 4).await?,
        "retry_parked of a parked entry returned false"
    );
    ensure!(
        !store.retry_parked(&group, "orders", 0, 6).await?,
        "retry_parked of an entry never parked returned true"
    );
    ensure!(
        !store
            .retry_parked(&fresh_group("parked-retry-other"), "orders", 0, 4)
            .await?,
        "retry_parked of the same key in another group returned true"
    );
    let marked: Vec<(String, u32, u64)> = store
        .parked(&group)
        .await?
        .into_iter()
        .filter(|parked| parked.retry_requested)
        .map(|parked| (parked.subscription, parked.partition, parked.position))
        .collect();
    ensure_eq!(
        marked,
        vec![("orders".to_owned(), 0, 4)],
        "the entries marked for retry"
    );
    Ok(())
}

/// `unpark` removes that entry and no other, and says whether it was parked.
pub async fn unpark_removes_only_that_entry<S: ParkedStore + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("parked-unpark");
    let other_group = fresh_group("parked-unpark-other");
    let kept = entry("orders", 0, 5, "kept");
    store
        .park(&group, &entry("orders", 0, 4, "removed"))
        .await?;
    store.park(&group, &kept).await?;
    store
        .park(&other_group, &entry("orders", 0, 4, "other group"))
        .await?;
    ensure!(
        store.unpark(&group, "orders", 0, 4).await?,
        "unpark of a parked entry returned false"
    );
    ensure!(
        !store.unpark(&group, "orders", 0, 4).await?,
        "a second unpark of the same entry returned true"
    );
    ensure_eq!(
        store.parked(&group).await?,
        vec![kept],
        "parked() after unpark"
    );
    ensure_eq!(
        store.parked(&other_group).await?.len(),
        1,
        "parked() of another group holding the same key"
    );
    Ok(())
}

/// Groups are separate, also a group whose name is a prefix of another's.
pub async fn parked_groups_are_separate<S: ParkedStore + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("parked-groups");
    let longer = format!("{group}x");
    let nested = format!("{group}/x");
    store.park(&group, &entry("s", 0, 1, "g")).await?;
    store.park(&longer, &entry("s", 0, 2, "gx")).await?;
    store.park(&nested, &entry("s", 0, 3, "g/x")).await?;
    for (name, position) in [(&group, 1), (&longer, 2), (&nested, 3)] {
        let positions: Vec<u64> = store
            .parked(name)
            .await?
            .iter()
            .map(|p| p.position)
            .collect();
        ensure_eq!(positions, vec![position], "parked({name:?})");
    }
    Ok(())
}

/// The extremes are kept verbatim: the highest partition and position, the longest name and
/// error text (multi-byte characters), the most attempts.
pub async fn parked_extremes_round_trip<S: ParkedStore + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("parked-extremes");
    let name = "ß".repeat(MAX_NAME_BYTES / 2);
    let mut high = entry(
        &name,
        u32::MAX,
        MAX_POSITION,
        &"€".repeat(MAX_ERROR_BYTES / 3),
    );
    high.attempts = u32::MAX;
    let mut low = entry("a", 0, 0, "' \" ; -- \\ % _ {}");
    low.attempts = 0;
    store.park(&group, &high).await?;
    store.park(&group, &low).await?;
    ensure_eq!(
        store.parked(&group).await?,
        vec![low, high.clone()],
        "parked() of the extremes"
    );
    ensure!(
        store.unpark(&group, &name, u32::MAX, MAX_POSITION).await?,
        "unpark at the highest partition and position returned false"
    );
    Ok(())
}

/// Invalid input is rejected naming the argument, and nothing of it is kept.
pub async fn parked_invalid_inputs_are_rejected<S: ParkedStore + ?Sized>(store: &S) -> CaseResult {
    let group = fresh_group("parked-invalid");
    let valid = entry("s", 0, 1, "e");
    expect_invalid(
        store.park("", &valid).await,
        Argument::Group,
        "park in group \"\"",
    )?;
    expect_invalid(
        store.park(&group, &entry("", 0, 1, "e")).await,
        Argument::Subscription,
        "park of subscription \"\"",
    )?;
    expect_invalid(
        store
            .park(&group, &entry("s", 0, MAX_POSITION + 1, "e"))
            .await,
        Argument::Position,
        "park above the highest position",
    )?;
    let mut long = valid.clone();
    long.error = "x".repeat(MAX_ERROR_BYTES + 1);
    expect_invalid(
        store.park(&group, &long).await,
        Argument::ErrorText,
        "park of a long error",
    )?;
    let mut nul = valid.clone();
    nul.error = "a\0b".to_owned();
    expect_invalid(
        store.park(&group, &nul).await,
        Argument::ErrorText,
        "park of a NUL",
    )?;
    expect_invalid(store.parked("").await, Argument::Group, "parked(\"\")")?;
    expect_invalid(
        store.retry_parked(&group, "s", 0, MAX_POSITION + 1).await,
        Argument::Position,
        "retry_parked above the highest position",
    )?;
    expect_invalid(
        store.unpark(&group, "a\0", 0, 1).await,
        Argument::Subscription,
        "unpark of a subscription with a NUL",
    )?;
    ensure_eq!(
        store.parked(&group).await?,
        vec![],
        "parked() after invalid parks"
    );
    Ok(())
}
