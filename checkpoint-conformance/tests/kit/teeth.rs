//! Proof of teeth: the kit reports every deliberately broken store as failing, and names the
//! clauses that caught it.

use checkpoint_conformance::history::{HistoryConfig, run_histories};
use checkpoint_conformance::{EXCLUSIVE_CASES, MONOTONIC_CASES};

use crate::broken::{BrokenStore, Flaw};

/// Runs every case against a fresh store with `flaw`; returns the names of the failing cases.
fn failing_cases(flaw: Flaw) -> Vec<&'static str> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut failing = Vec::new();
        for case in MONOTONIC_CASES {
            let store = BrokenStore::new(flaw);
            if (case.run)(&store).await.is_err() {
                failing.push(case.name);
            }
        }
        for case in EXCLUSIVE_CASES {
            let store = BrokenStore::new(flaw);
            if (case.run)(&store).await.is_err() {
                failing.push(case.name);
            }
        }
        failing
    })
}

fn assert_caught(flaw: Flaw, expected: &[&str]) {
    let failing = failing_cases(flaw);
    println!("{flaw:?} caught by: {failing:?}");
    for case in expected {
        assert!(
            failing.contains(case),
            "the kit passed a store with flaw {flaw:?} in `{case}`; it failed only {failing:?}"
        );
    }
}

#[test]
fn store_that_overwrites_is_caught() {
    assert_caught(
        Flaw::Overwrites,
        &[
            "lower_save_is_ignored",
            "zombie_save_after_handover_is_ignored",
            "concurrent_saves_keep_the_maximum",
        ],
    );
}

#[test]
fn store_that_reads_then_writes_is_caught() {
    assert_caught(
        Flaw::ReadsThenWrites,
        &["concurrent_saves_keep_the_maximum", "concurrent_histories"],
    );
}

#[test]
fn store_whose_list_leaks_other_groups_is_caught() {
    assert_caught(Flaw::ListLeaksOtherGroups, &["prefix_groups_are_separate"]);
}

#[test]
fn store_whose_save_all_keeps_the_first_is_caught() {
    assert_caught(
        Flaw::SaveAllKeepsFirst,
        &["save_all_repeated_keys_keep_highest"],
    );
}

#[test]
fn store_with_f64_positions_is_caught() {
    assert_caught(
        Flaw::PositionsAsF64,
        &["position_boundaries", "exclusive_positions_are_exact"],
    );
}

#[test]
fn store_whose_advance_does_not_compare_is_caught() {
    assert_caught(
        Flaw::AdvanceDoesNotCompare,
        &[
            "advance_from_stale_position_is_refused",
            "exclusive_contenders_one_winner_per_step",
        ],
    );
}

#[test]
fn store_whose_claim_ignores_the_fingerprint_is_caught() {
    assert_caught(
        Flaw::ClaimIgnoresFingerprint,
        &[
            "claim_refuses_changed_query",
            "claim_adopts_monotonic_checkpoint",
        ],
    );
}

#[test]
fn store_whose_claim_is_not_atomic_is_caught() {
    assert_caught(
        Flaw::ClaimReadsThenCreates,
        &["exclusive_contenders_one_winner_per_step"],
    );
}

#[test]
fn store_that_skips_validation_is_caught() {
    assert_caught(
        Flaw::SaveSkipsPositionCheck,
        &[
            "invalid_inputs_are_rejected",
            "arbitrary_inputs_round_trip_or_are_rejected",
        ],
    );
}

#[test]
fn every_flaw_has_a_teeth_test() {
    // A new flaw must get its own test above; this keeps the list honest.
    assert_eq!(Flaw::ALL.len(), 9);
}

/// The history checker alone (without the deterministic cases) catches the non-atomic store
/// and prints the failing history in a readable form.
#[test]
fn histories_alone_catch_a_non_atomic_store() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let failure = runtime.block_on(async {
        let store = BrokenStore::new(Flaw::ReadsThenWrites);
        let config = HistoryConfig {
            cases: 256,
            seed: 7,
            shrink_runs: 64,
        };
        run_histories(&store, &config)
            .await
            .expect_err("the checker must reject a non-atomic store")
    });
    let message = failure.to_string();
    println!("{message}");
    assert!(
        message.contains("CHECKPOINT_SEED=7"),
        "the report names the seed: {message}"
    );
    assert!(
        message.contains("owner "),
        "the report prints the history: {message}"
    );
}
