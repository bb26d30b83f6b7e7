//! The lease operations' invalid inputs, counted on the wire.

use checkpoint_core::LeaseStore;

use crate::cases::{bad_lease_calls, expect_invalid_lease_call};
use crate::round_trips::CountingProxy;
use crate::{Failure, fresh_group};

/// Runs every invalid lease call of the kit ([`bad_lease_calls`]: bad names, owners,
/// durations, partitions, through all six operations) against `store`, and checks that each is
/// refused with [`Error::InvalidInput`](checkpoint_core::Error::InvalidInput) naming the right
/// argument and, when `proxy` is given, that none cost a round trip. Returns how many calls
/// were refused.
///
/// Warm `store` up through `proxy` first (one valid call), so that a connection opened lazily
/// is not counted as the refusal's.
///
/// # Errors
///
/// A [`Failure`] naming the first call that was not refused as it must be, or how many round
/// trips the refusals cost.
pub async fn bad_lease_input<S: LeaseStore + ?Sized>(
    store: &S,
    proxy: Option<&CountingProxy>,
) -> Result<usize, Failure> {
    let group = fresh_group("bad-lease");
    let before = proxy.map(CountingProxy::round_trips);
    let calls = bad_lease_calls(store, &group).await;
    let after = proxy.map(CountingProxy::round_trips);
    for (call, result) in &calls {
        expect_invalid_lease_call(call, result)?;
    }
    if let (Some(before), Some(after)) = (before, after)
        && after != before
    {
        return Err(Failure::new(format!(
            "{} invalid lease calls were refused, but {} round trips went to the server meanwhile: invalid input must be refused before any I/O",
            calls.len(),
            after - before
        )));
    }
    Ok(calls.len())
}
