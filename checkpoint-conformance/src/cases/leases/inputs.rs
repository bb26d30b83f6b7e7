//! Invalid input of every lease operation.

use std::future::Future;
use std::time::Duration;

use checkpoint_core::lease::{MAX_LEASE_DURATION, MAX_LEASE_PARTITIONS, MIN_LEASE_DURATION};
use checkpoint_core::validation::MAX_NAME_BYTES;
use checkpoint_core::{Argument, Error, LeaseStore};

use super::{LONG, SUBSCRIPTION, fresh};
use crate::{CaseResult, Failure};

/// One invalid lease call: what it is, and the argument its refusal must name.
pub struct BadLeaseCall {
    /// What the call is, for messages.
    pub what: String,
    /// The argument the refusal must name.
    pub argument: Argument,
}

/// The calls made so far, with their results.
type Calls = Vec<(BadLeaseCall, Result<(), Error>)>;

/// Awaits `call` and records its result as `what`, which must be refused for `argument`.
async fn record<T>(
    calls: &mut Calls,
    what: &str,
    argument: Argument,
    call: impl Future<Output = Result<T, Error>>,
) {
    let result = call.await.map(|_| ());
    let what = what.to_owned();
    calls.push((BadLeaseCall { what, argument }, result));
}

/// Every invalid lease call the kit makes, with the argument it must be refused for, run
/// against `store` in `group`: the result of each, in order.
pub async fn bad_lease_calls<S: LeaseStore + ?Sized>(store: &S, group: &str) -> Calls {
    let mut calls = Vec::new();
    bad_acquires(store, group, &mut calls).await;
    bad_other_calls(store, group, &mut calls).await;
    calls
}

/// One invalid `acquire`: what it is, the argument it must be refused for, and its group,
/// subscription, owner, partitions and duration.
type BadAcquire<'a> = (
    &'a str,
    Argument,
    &'a str,
    &'a str,
    &'a str,
    &'a [u32],
    Duration,
);

/// The invalid `acquire`s: every argument it checks.
async fn bad_acquires<S: LeaseStore + ?Sized>(store: &S, group: &str, calls: &mut Calls) {
    bad_acquire_names(store, group, calls).await;
    bad_acquire_values(store, group, calls).await;
}

/// The `acquire`s with an invalid group, subscription or owner.
async fn bad_acquire_names<S: LeaseStore + ?Sized>(store: &S, group: &str, calls: &mut Calls) {
    let long_name = "n".repeat(MAX_NAME_BYTES + 1);
    let s = SUBSCRIPTION;
    let names: [BadAcquire<'_>; 5] = [
        (
            "acquire with an empty group",
            Argument::Group,
            "",
            s,
            "a",
            &[0],
            LONG,
        ),
        (
            "acquire with a NUL in the subscription",
            Argument::Subscription,
            group,
            "a\0b",
            "a",
            &[0],
            LONG,
        ),
        (
            "acquire with an empty owner",
            Argument::Owner,
            group,
            s,
            "",
            &[0],
            LONG,
        ),
        (
            "acquire with an over-long owner",
            Argument::Owner,
            group,
            s,
            &long_name,
            &[0],
            LONG,
        ),
        (
            "acquire with a NUL in the owner",
            Argument::Owner,
            group,
            s,
            "a\0",
            &[0],
            LONG,
        ),
    ];
    acquire_each(store, names, calls).await;
}

/// The `acquire`s with an invalid duration or partitions.
async fn bad_acquire_values<S: LeaseStore + ?Sized>(store: &S, group: &str, calls: &mut Calls) {
    let s = SUBSCRIPTION;
    let too_many: Vec<u32> = (0..=MAX_LEASE_PARTITIONS as u32).collect();
    let short = MIN_LEASE_DURATION - Duration::from_millis(1);
    let long = MAX_LEASE_DURATION + Duration::from_secs(1);
    let (d, p) = (Argument::Duration, Argument::Partition);
    let values: [BadAcquire<'_>; 5] = [
        (
            "acquire of a zero duration",
            d,
            group,
            s,
            "a",
            &[0],
            Duration::ZERO,
        ),
        (
            "acquire of a duration under the minimum",
            d,
            group,
            s,
            "a",
            &[0],
            short,
        ),
        (
            "acquire of a duration over a day",
            d,
            group,
            s,
            "a",
            &[0],
            long,
        ),
        (
            "acquire naming a partition twice",
            p,
            group,
            s,
            "a",
            &[3, 1, 3],
            LONG,
        ),
        (
            "acquire of too many partitions",
            Argument::Partitions,
            group,
            s,
            "a",
            &too_many,
            LONG,
        ),
    ];
    acquire_each(store, values, calls).await;
}

/// Makes each of `cases` and records its result.
async fn acquire_each<S: LeaseStore + ?Sized, const N: usize>(
    store: &S,
    cases: [BadAcquire<'_>; N],
    calls: &mut Calls,
) {
    for (what, argument, group, subscription, owner, partitions, duration) in cases {
        let call = store.acquire(group, subscription, owner, partitions, duration);
        record(calls, what, argument, call).await;
    }
}

/// The invalid calls of every other lease operation.
async fn bad_other_calls<S: LeaseStore + ?Sized>(store: &S, group: &str, calls: &mut Calls) {
    let long_name = "n".repeat(MAX_NAME_BYTES + 1);
    let s = SUBSCRIPTION;
    let (owner, duration) = (Argument::Owner, Argument::Duration);
    record(
        calls,
        "renew with an empty owner",
        owner,
        store.renew(group, s, "", LONG),
    )
    .await;
    let zero = store.renew(group, s, "a", Duration::ZERO);
    record(calls, "renew of a zero duration", duration, zero).await;
    let long = store.renew(group, &long_name, "a", LONG);
    record(
        calls,
        "renew with an over-long subscription",
        Argument::Subscription,
        long,
    )
    .await;
    let empty = store.release(group, s, "", &[0]);
    record(calls, "release with an empty owner", owner, empty).await;
    let twice = store.release(group, s, "a", &[0, 0]);
    record(
        calls,
        "release naming a partition twice",
        Argument::Partition,
        twice,
    )
    .await;
    record(
        calls,
        "leave with an empty owner",
        owner,
        store.leave(group, s, ""),
    )
    .await;
    record(
        calls,
        "leave with an empty group",
        Argument::Group,
        store.leave("", s, "a"),
    )
    .await;
    let leases = store.leases(group, "");
    record(
        calls,
        "leases with an empty subscription",
        Argument::Subscription,
        leases,
    )
    .await;
    let empty = store.request_handover(group, s, "", &[0]);
    record(
        calls,
        "request_handover with an empty requester",
        Argument::Requester,
        empty,
    )
    .await;
    let twice = store.request_handover(group, s, "b", &[2, 2]);
    record(
        calls,
        "request_handover naming a partition twice",
        Argument::Partition,
        twice,
    )
    .await;
}

/// Checks one result of [`bad_lease_calls`]: refused with
/// [`Error::InvalidInput`] naming the argument.
pub fn expect_invalid_lease_call(
    call: &BadLeaseCall,
    result: &Result<(), Error>,
) -> Result<(), Failure> {
    match result {
        Err(Error::InvalidInput(invalid)) if invalid.argument == call.argument => Ok(()),
        other => Err(Failure::new(format!(
            "{}: expected Error::InvalidInput naming the {}, got {other:?}",
            call.what, call.argument
        ))),
    }
}

/// Every lease operation refuses invalid input with [`Error::InvalidInput`] naming the
/// argument: empty, over-long or NUL-holding names and owners, a duration outside
/// `MIN_LEASE_DURATION..=MAX_LEASE_DURATION`, a partition named twice, too many partitions.
pub async fn lease_invalid_inputs_are_rejected<S: LeaseStore + ?Sized>(
    a: &S,
    _b: &S,
) -> CaseResult {
    let group = fresh("inputs");
    for (call, result) in bad_lease_calls(a, &group).await {
        expect_invalid_lease_call(&call, &result)?;
    }
    Ok(())
}
