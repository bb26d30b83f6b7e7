//! Proof of teeth for the lease cases: each broken lease store is caught by the case written
//! for its flaw, with that case's message; the same store without a flaw passes them all.

use checkpoint_conformance::cases;
use checkpoint_conformance::{__private::BoxFuture, CaseResult};

use crate::broken_leases::{BrokenLeaseStore, LeaseFlaw};

type Run = for<'a> fn(&'a BrokenLeaseStore, &'a BrokenLeaseStore) -> BoxFuture<'a, CaseResult>;

macro_rules! table {
    ($($case:ident)*) => {
        &[$((stringify!($case), {
            fn run<'a>(a: &'a BrokenLeaseStore, b: &'a BrokenLeaseStore) -> BoxFuture<'a, CaseResult> {
                Box::pin(cases::$case(a, b))
            }
            run as Run
        })),*]
    };
}

/// Every lease case that needs only `LeaseStore` (the others also retire and purge).
const CASES: &[(&str, Run)] = table! {
    acquire_grants_free_partitions
    a_live_lease_is_refused_to_another_owner
    acquire_of_an_own_live_lease_keeps_its_epoch
    epochs_increase_with_every_change_of_hands
    renew_extends_every_lease_of_the_owner
    renew_without_live_leases_is_not_held
    renew_after_a_takeover_is_refused
    release_frees_a_lease_at_once
    release_by_a_non_holder_changes_nothing
    leave_releases_everything_and_ends_the_heartbeat
    an_expired_lease_goes_to_another_owner_after_the_holders_deadline
    one_clock_decides_expiry
    leases_lists_every_holder_and_live_owner
    a_handover_request_reaches_the_holder
    concurrent_acquirers_each_partition_goes_to_one
    a_release_racing_a_handover_request_releases
    an_expired_lease_goes_to_a_taker_racing_its_former_holder
    lease_invalid_inputs_are_rejected
    lease_histories
};

/// Runs the named cases (all when `only` is empty) on a fresh pair with `flaw`: the failing
/// ones and their messages.
fn failures(flaw: LeaseFlaw, only: &[&str]) -> Vec<(&'static str, String)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut failing = Vec::new();
        for &(name, run) in CASES
            .iter()
            .filter(|(name, _)| only.is_empty() || only.contains(name))
        {
            let (a, b) = BrokenLeaseStore::pair(flaw);
            if let Err(failure) = run(&a, &b).await {
                failing.push((name, failure.to_string()));
            }
        }
        failing
    })
}

/// `case` catches `flaw`, with a message that contains `message`.
fn assert_caught(flaw: LeaseFlaw, case: &str, message: &str) {
    let failing = failures(flaw, &[case]);
    println!("{flaw:?}: {failing:?}");
    match failing.iter().find(|(name, _)| *name == case) {
        Some((_, text)) => assert!(
            text.contains(message),
            "{case} caught {flaw:?}, but its message does not say {message:?}: {text}"
        ),
        None => panic!("the kit passed a lease store with flaw {flaw:?} in `{case}`"),
    }
}

#[test]
fn the_store_without_a_flaw_passes_every_lease_case() {
    let failing = failures(LeaseFlaw::None, &[]);
    assert!(
        failing.is_empty(),
        "the lease store without a flaw failed: {failing:?}"
    );
}

#[test]
fn two_acquirers_that_both_win_are_caught() {
    assert_caught(
        LeaseFlaw::RacyAcquire,
        "concurrent_acquirers_each_partition_goes_to_one",
        "exactly one must",
    );
}

#[test]
fn a_renew_accepted_after_a_takeover_is_caught() {
    assert_caught(
        LeaseFlaw::RenewAfterTakeover,
        "renew_after_a_takeover_is_refused",
        "expected Error::NotHeld for owner \"a\"",
    );
}

#[test]
fn a_reused_epoch_is_caught() {
    assert_caught(
        LeaseFlaw::EpochReused,
        "epochs_increase_with_every_change_of_hands",
        "never one used before",
    );
}

#[test]
fn a_release_by_a_non_holder_is_caught() {
    assert_caught(
        LeaseFlaw::ReleaseByAnyone,
        "release_by_a_non_holder_changes_nothing",
        "only the holder releases",
    );
}

#[test]
fn expiry_by_the_clients_clock_is_caught() {
    assert_caught(
        LeaseFlaw::ClientClock,
        "one_clock_decides_expiry",
        "judged by each client's own clock",
    );
}

#[test]
fn a_renew_that_extends_only_some_leases_is_caught() {
    assert_caught(
        LeaseFlaw::PartialRenew,
        "renew_extends_every_lease_of_the_owner",
        "it must report every one under its epoch",
    );
}

#[test]
fn a_list_that_misses_a_holder_is_caught() {
    assert_caught(
        LeaseFlaw::ListMissesHolder,
        "leases_lists_every_holder_and_live_owner",
        "leases: (partition, (holder, epoch))",
    );
}

#[test]
fn a_handover_request_that_undoes_a_release_is_caught() {
    assert_caught(
        LeaseFlaw::LostUpdate,
        "a_release_racing_a_handover_request_releases",
        "a released lease is free, whatever handover request crossed the release",
    );
}

#[test]
fn an_expired_lease_refused_while_its_former_holder_is_busy_is_caught() {
    assert_caught(
        LeaseFlaw::BusyHolderKeepsExpired,
        "an_expired_lease_goes_to_a_taker_racing_its_former_holder",
        "refused must name only partitions another owner holds live",
    );
}

#[test]
fn the_histories_catch_two_holders_at_once() {
    let failing = failures(LeaseFlaw::ClientClock, &["lease_histories"]);
    assert!(
        failing
            .iter()
            .any(|(_, text)| text.contains("two holders at once")),
        "the lease histories passed a store whose client b judges expiry an hour ahead: {failing:?}"
    );
}
