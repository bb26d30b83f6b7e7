//! Invalid input of every lease operation.

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

/// Every invalid lease call the kit makes, with the argument it must be refused for, run
/// against `store` in `group`: the result of each, in order.
pub async fn bad_lease_calls<S: LeaseStore + ?Sized>(
    store: &S,
    group: &str,
) -> Vec<(BadLeaseCall, Result<(), Error>)> {
    let long_name = "n".repeat(MAX_NAME_BYTES + 1);
    let too_many: Vec<u32> = (0..=MAX_LEASE_PARTITIONS as u32).collect();
    let short = MIN_LEASE_DURATION - Duration::from_millis(1);
    let long = MAX_LEASE_DURATION + Duration::from_secs(1);
    let s = SUBSCRIPTION;
    let mut calls = Vec::new();
    macro_rules! call {
        ($what:expr, $argument:expr, $call:expr) => {
            calls.push((
                BadLeaseCall {
                    what: $what.to_owned(),
                    argument: $argument,
                },
                $call.await.map(|_| ()),
            ))
        };
    }
    call!(
        "acquire with an empty group",
        Argument::Group,
        store.acquire("", s, "a", &[0], LONG)
    );
    call!(
        "acquire with a NUL in the subscription",
        Argument::Subscription,
        store.acquire(group, "a\0b", "a", &[0], LONG)
    );
    call!(
        "acquire with an empty owner",
        Argument::Owner,
        store.acquire(group, s, "", &[0], LONG)
    );
    call!(
        "acquire with an over-long owner",
        Argument::Owner,
        store.acquire(group, s, &long_name, &[0], LONG)
    );
    call!(
        "acquire with a NUL in the owner",
        Argument::Owner,
        store.acquire(group, s, "a\0", &[0], LONG)
    );
    call!(
        "acquire of a zero duration",
        Argument::Duration,
        store.acquire(group, s, "a", &[0], Duration::ZERO)
    );
    call!(
        "acquire of a duration under the minimum",
        Argument::Duration,
        store.acquire(group, s, "a", &[0], short)
    );
    call!(
        "acquire of a duration over a day",
        Argument::Duration,
        store.acquire(group, s, "a", &[0], long)
    );
    call!(
        "acquire naming a partition twice",
        Argument::Partition,
        store.acquire(group, s, "a", &[3, 1, 3], LONG)
    );
    call!(
        "acquire of too many partitions",
        Argument::Partitions,
        store.acquire(group, s, "a", &too_many, LONG)
    );
    call!(
        "renew with an empty owner",
        Argument::Owner,
        store.renew(group, s, "", LONG)
    );
    call!(
        "renew of a zero duration",
        Argument::Duration,
        store.renew(group, s, "a", Duration::ZERO)
    );
    call!(
        "renew with an over-long subscription",
        Argument::Subscription,
        store.renew(group, &long_name, "a", LONG)
    );
    call!(
        "release with an empty owner",
        Argument::Owner,
        store.release(group, s, "", &[0])
    );
    call!(
        "release naming a partition twice",
        Argument::Partition,
        store.release(group, s, "a", &[0, 0])
    );
    call!(
        "leave with an empty owner",
        Argument::Owner,
        store.leave(group, s, "")
    );
    call!(
        "leave with an empty group",
        Argument::Group,
        store.leave("", s, "a")
    );
    call!(
        "leases with an empty subscription",
        Argument::Subscription,
        store.leases(group, "")
    );
    call!(
        "request_handover with an empty requester",
        Argument::Requester,
        store.request_handover(group, s, "", &[0])
    );
    call!(
        "request_handover naming a partition twice",
        Argument::Partition,
        store.request_handover(group, s, "b", &[2, 2])
    );
    calls
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
