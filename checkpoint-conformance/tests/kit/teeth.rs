//! Proof of teeth: the kit reports every deliberately broken store as failing, and names the
//! clauses that caught it.

use checkpoint_conformance::history::{HistoryConfig, run_histories, run_retire_histories};
use checkpoint_conformance::{
    ADMIN_CASES, EXCLUSIVE_ADMIN_CASES, EXCLUSIVE_CASES, MONOTONIC_CASES,
};

use crate::broken::{BrokenStore, Flaw};
use crate::broken_admin::{AdminFlaw, BrokenAdminStore};

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

/// Runs every case of the operations API against a fresh store with `flaw`; returns the
/// failing cases with their messages.
fn failing_admin_cases(flaw: AdminFlaw) -> Vec<(&'static str, String)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut failing = Vec::new();
        for case in ADMIN_CASES {
            let store = BrokenAdminStore::new(flaw);
            if let Err(failure) = (case.run)(&store).await {
                failing.push((case.name, failure.to_string()));
            }
        }
        for case in EXCLUSIVE_ADMIN_CASES {
            let store = BrokenAdminStore::new(flaw);
            if let Err(failure) = (case.run)(&store).await {
                failing.push((case.name, failure.to_string()));
            }
        }
        failing
    })
}

/// Asserts that each of `cases` fails against a store with `flaw`, its message containing
/// every one of `naming` (the group, the wrong keys).
fn assert_admin_caught(flaw: AdminFlaw, cases: &[(&str, &[&str])]) {
    let failing = failing_admin_cases(flaw);
    let names: Vec<&str> = failing.iter().map(|(name, _)| *name).collect();
    println!("{flaw:?} caught by: {names:?}");
    for (case, naming) in cases {
        let Some((_, message)) = failing.iter().find(|(name, _)| name == case) else {
            panic!(
                "the kit passed a store with flaw {flaw:?} in `{case}`; it failed only {names:?}"
            );
        };
        println!("--- {case}:\n{}", &message[..message.len().min(3_000)]);
        for expected in *naming {
            assert!(
                message.contains(expected),
                "`{case}` caught {flaw:?}, but its message does not name {expected:?}:\n{message}"
            );
        }
    }
}

#[test]
fn retire_without_a_tombstone_is_caught() {
    assert_admin_caught(
        AdminFlaw::RetireLeavesNoTombstone,
        &[
            (
                "zombie_saves_after_retire_are_ignored",
                &[
                    "wrong key(s) in group \"ck-retire-zombie-",
                    "(\"old\", 0): expected nothing, stored 99",
                    "(\"old\", 2): expected nothing, stored 50",
                ],
            ),
            (
                "retire_of_an_unknown_name_guards_it",
                &[
                    "in group \"ck-retire-unknown-",
                    "(\"ghost\", 0): expected nothing, stored 7",
                ],
            ),
            (
                "retire_during_concurrent_histories",
                &["in group \"ck-retire-history-", "retired"],
            ),
        ],
    );
}

#[test]
fn tombstone_on_existing_partitions_only_is_caught() {
    assert_admin_caught(
        AdminFlaw::TombstoneGuardsOnlyExistingPartitions,
        &[
            (
                "zombie_saves_after_retire_are_ignored",
                &[
                    "in group \"ck-retire-zombie-",
                    "(\"old\", 2): expected nothing, stored 50",
                    "(\"old\", 3): expected nothing, stored 7",
                    "(\"old\", 4294967295): expected nothing, stored 9223372036854775807",
                ],
            ),
            (
                "retire_of_an_unknown_name_guards_it",
                &[
                    "in group \"ck-retire-unknown-",
                    "(\"ghost\", 1): expected nothing, stored 6",
                ],
            ),
        ],
    );
}

/// A retire whose delete and tombstone are two steps is only caught when a save lands between
/// them: the body of `retire_during_concurrent_histories`, with enough histories (256 from a
/// fixed seed) that one always does.
#[test]
fn retire_that_tombstones_after_deleting_is_caught() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let failure = runtime.block_on(async {
        let store = BrokenAdminStore::new(AdminFlaw::RetireDeletesThenTombstones);
        let config = HistoryConfig {
            cases: 256,
            seed: 7,
            shrink_runs: 0,
        };
        run_retire_histories(&store, &config)
            .await
            .expect_err("the histories must catch a retire that is not atomic")
    });
    let message = failure.to_string();
    println!("{message}");
    for expected in [
        "with a retire (CHECKPOINT_SEED=7)",
        "in group \"ck-retire-history-",
        "retired during [",
        "show retired orders",
    ] {
        assert!(
            message.contains(expected),
            "{expected:?} not in:\n{message}"
        );
    }
}

#[test]
fn retire_of_every_prefixed_name_is_caught() {
    assert_admin_caught(
        AdminFlaw::RetireTakesPrefixes,
        &[(
            "retire_and_purge_leave_others_untouched",
            &[
                "/g\":",
                "(\"orders2\", 0): expected 13, stored nothing",
                "(\"orders:1\", 0): expected 14, stored nothing",
            ],
        )],
    );
}

#[test]
fn start_at_that_overwrites_is_caught() {
    assert_admin_caught(
        AdminFlaw::StartAtOverwrites,
        &[(
            "start_at_refuses_an_existing_subscription",
            &[
                "in group \"ck-start-exists-",
                "(\"orders\", 0): expected 100, stored 5",
                "(\"orders\", 2): expected nothing, stored 7",
            ],
        )],
    );
}

#[test]
fn start_at_that_checks_then_writes_is_caught() {
    assert_admin_caught(
        AdminFlaw::StartAtChecksThenWrites,
        &[(
            "concurrent_start_ats_of_one_name_let_at_most_one_through",
            &[
                "round 0: 3 of 3 concurrent start_at(\"replay-0\") calls in group \"ck-start-race-",
                "callers [0, 1, 2]",
                "at most one may succeed",
            ],
        )],
    );
}

#[test]
fn groups_that_truncates_is_caught() {
    assert_admin_caught(
        AdminFlaw::GroupsTruncates,
        &[(
            "groups_lists_many_groups",
            &["under prefix \"ck-many-groups-", "200 missing", "/1000\""],
        )],
    );
}

#[test]
fn groups_unsorted_and_repeated_is_caught() {
    assert_admin_caught(
        AdminFlaw::GroupsUnsortedRepeated,
        &[(
            "groups_lists_every_group_sorted_once",
            &["\"ck-groups-", "is listed twice"],
        )],
    );
}

#[test]
fn purge_that_deletes_live_checkpoints_is_caught() {
    assert_admin_caught(
        AdminFlaw::PurgeDeletesLive,
        &[(
            "purge_of_a_live_subscription_is_refused",
            &[
                "in group \"ck-purge-live-",
                "(\"live\", 0): expected 10, stored nothing",
                "(\"live\", 1): expected 20, stored nothing",
            ],
        )],
    );
}

#[test]
fn claim_that_ignores_the_tombstone_is_caught() {
    assert_admin_caught(
        AdminFlaw::ClaimIgnoresTombstone,
        &[(
            "claim_of_a_retired_subscription_is_refused",
            &[
                "retired subscription \"projection\" of group \"ck-claim-retired-",
                "load(\"projection\", 0) returned",
            ],
        )],
    );
}

#[test]
fn every_admin_flaw_has_a_teeth_test() {
    // A new flaw must get its own test above; this keeps the list honest.
    assert_eq!(AdminFlaw::ALL.len(), 10);
}
