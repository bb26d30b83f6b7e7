//! The macros that turn every case into a named test for a given store factory.

/// Calls back `$callback!{ ($($args)*) case... }` with the name of every monotonic case.
///
/// The list of cases lives here once: [`checkpoint_store_tests!`](crate::checkpoint_store_tests)
/// and [`MONOTONIC_CASES`](crate::MONOTONIC_CASES) are both built from it.
#[doc(hidden)]
#[macro_export]
macro_rules! __monotonic_cases {
    ($callback:ident ! ($($args:tt)*)) => {
        $crate::$callback! { ($($args)*)
            first_save_is_stored
            higher_save_moves_forward
            equal_save_changes_nothing
            lower_save_is_ignored
            zombie_save_after_handover_is_ignored
            load_of_absent_key_is_none
            keys_differ_by_every_part
            list_of_empty_group_is_empty
            list_of_one_checkpoint
            list_of_large_group_is_complete
            prefix_groups_are_separate
            awkward_names_are_stored_verbatim
            keys_that_collide_naively_are_separate
            partition_boundaries
            position_boundaries
            invalid_inputs_are_rejected
            arbitrary_inputs_round_trip_or_are_rejected
            save_all_repeated_keys_keep_highest
            save_all_any_order_never_moves_back
            save_all_empty_batch_does_nothing
            save_all_of_ten_thousand
            concurrent_saves_keep_the_maximum
            concurrent_histories
        }
    };
}

/// Calls back `$callback!{ ($($args)*) case... }` with the name of every exclusive case.
#[doc(hidden)]
#[macro_export]
macro_rules! __exclusive_cases {
    ($callback:ident ! ($($args:tt)*)) => {
        $crate::$callback! { ($($args)*)
            claim_creates_at_initial_position
            claim_keeps_stored_position
            claim_refuses_changed_query
            claim_adopts_monotonic_checkpoint
            advance_from_current_position
            advance_from_stale_position_is_refused
            exclusive_checkpoints_are_listed
            exclusive_positions_are_exact
            exclusive_invalid_inputs_are_rejected
            exclusive_contenders_one_winner_per_step
        }
    };
}

/// Calls back `$callback!{ ($($args)*) case... }` with the name of every case of the
/// operations API that needs only [`CheckpointAdmin`](checkpoint_core::CheckpointAdmin).
#[doc(hidden)]
#[macro_export]
macro_rules! __admin_cases {
    ($callback:ident ! ($($args:tt)*)) => {
        $crate::$callback! { ($($args)*)
            groups_lists_every_group_sorted_once
            groups_lists_many_groups
            groups_lists_a_group_with_only_a_retired_subscription
            start_at_creates_exactly_the_positions
            start_at_refuses_an_existing_subscription
            start_at_refuses_a_retired_name
            concurrent_start_ats_of_one_name_let_at_most_one_through
            retire_hides_from_list_and_load
            zombie_saves_after_retire_are_ignored
            retire_of_an_unknown_name_guards_it
            retire_is_idempotent
            retired_lists_sorted_names
            retire_and_purge_leave_others_untouched
            purge_of_a_live_subscription_is_refused
            purge_of_nothing_is_ok
            purged_name_can_be_started_and_saved_again
            admin_invalid_inputs_are_rejected
            retire_during_concurrent_histories
        }
    };
}

/// Calls back `$callback!{ ($($args)*) case... }` with the name of every case of the
/// operations API that also claims and advances.
#[doc(hidden)]
#[macro_export]
macro_rules! __exclusive_admin_cases {
    ($callback:ident ! ($($args:tt)*)) => {
        $crate::$callback! { ($($args)*)
            claim_of_a_retired_subscription_is_refused
            advance_of_a_retired_subscription_is_moved_absent
        }
    };
}

/// Calls back `$callback!{ ($($args)*) case... }` with the name of every lease case.
#[doc(hidden)]
#[macro_export]
macro_rules! __lease_cases {
    ($callback:ident ! ($($args:tt)*)) => {
        $crate::$callback! { ($($args)*)
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
            a_retired_subscription_cannot_be_leased
            purge_removes_the_leases_of_a_retired_subscription
            a_lease_never_moves_a_checkpoint
            a_group_with_only_leases_is_not_listed
            concurrent_acquirers_each_partition_goes_to_one
            a_release_racing_a_handover_request_releases
            an_expired_lease_goes_to_a_taker_racing_its_former_holder
            lease_invalid_inputs_are_rejected
            lease_histories
        }
    };
}

/// Expands to one `#[test]` per lease case, each calling the factory twice (two clients) in a
/// runtime of its own.
#[doc(hidden)]
#[macro_export]
macro_rules! __two_client_case_tests {
    (($factory:path) $($case:ident)*) => {
        $(
            #[test]
            fn $case() {
                $crate::__private::run_case(stringify!($case), async {
                    let a = $factory().await;
                    let b = $factory().await;
                    $crate::cases::$case(&a, &b)
                        .await
                        .map_err(|failure| failure.in_store(::std::any::type_name_of_val(&a)))
                });
            }
        )*
    };
}

/// Expands to one `#[test]` per case, each calling the factory in a runtime of its own.
#[doc(hidden)]
#[macro_export]
macro_rules! __case_tests {
    (($factory:path) $($case:ident)*) => {
        $(
            #[test]
            fn $case() {
                $crate::__private::run_case(stringify!($case), async {
                    let store = $factory().await;
                    $crate::cases::$case(&store)
                        .await
                        .map_err(|failure| failure.in_store(::std::any::type_name_of_val(&store)))
                });
            }
        )*
    };
}

/// Builds a table of cases: name and a function that runs it.
#[doc(hidden)]
#[macro_export]
macro_rules! __case_table {
    (($store:ty) $($case:ident)*) => {
        &[$(
            $crate::Case {
                name: stringify!($case),
                run: {
                    fn run<'a>(store: &'a $store) -> $crate::__private::BoxFuture<'a, $crate::CaseResult> {
                        Box::pin($crate::cases::$case(store))
                    }
                    run
                },
            }
        ),*]
    };
}

/// Expands to one named `#[test]` per clause of the monotonic contract, run against the store
/// that `factory` makes.
///
/// `factory` is the path of an `async fn() -> S` where `S: CheckpointStore`. Each test builds
/// its own tokio runtime, calls the factory once inside it, and runs one case, which works in
/// fresh random groups of its own; so every test can run in parallel against one shared
/// server. A failing test prints which clause broke and how.
///
/// ```
/// use checkpoint_core::InMemoryCheckpointStore;
///
/// async fn store() -> InMemoryCheckpointStore {
///     InMemoryCheckpointStore::new()
/// }
///
/// checkpoint_conformance::checkpoint_store_tests!(store);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! checkpoint_store_tests {
    ($factory:path) => {
        $crate::__monotonic_cases! { __case_tests!($factory) }
    };
}

/// Expands to one named `#[test]` per clause of the exclusive contract (claim and advance),
/// run against the store that `factory` makes; `S: ExclusiveCheckpointStore`. Use it beside
/// [`checkpoint_store_tests!`], in another module, since both name their tests after cases.
///
/// ```
/// use checkpoint_core::InMemoryCheckpointStore;
///
/// async fn store() -> InMemoryCheckpointStore {
///     InMemoryCheckpointStore::new()
/// }
///
/// mod exclusive {
///     checkpoint_conformance::exclusive_store_tests!(super::store);
/// }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! exclusive_store_tests {
    ($factory:path) => {
        $crate::__exclusive_cases! { __case_tests!($factory) }
    };
}

/// Expands to one named `#[test]` per clause of the operations API
/// ([`CheckpointAdmin`](checkpoint_core::CheckpointAdmin): `groups`, `start_at`, `retire`,
/// `retired`, `purge`, and what a retired subscription does to `save`, `save_all`, `claim`
/// and `advance`), run against the store that `factory` makes.
///
/// `admin_store_tests!(factory)` is the whole of it, for a store that implements both
/// [`ExclusiveCheckpointStore`](checkpoint_core::ExclusiveCheckpointStore) and
/// `CheckpointAdmin` (every store of the workspace): the cases of
/// [`ADMIN_CASES`](crate::ADMIN_CASES) and [`EXCLUSIVE_ADMIN_CASES`](crate::EXCLUSIVE_ADMIN_CASES).
/// `admin_store_tests!(factory, without_exclusive)` leaves out the two cases that claim and
/// advance, for a store without the exclusive mode. Use it in a module of its own, beside
/// [`checkpoint_store_tests!`] and [`exclusive_store_tests!`], since all name their tests after
/// cases.
///
/// The cases share the server with everything else that runs: each works in fresh random
/// groups, and the ones about `groups` (which sees every group of the store) judge only the
/// groups they made, under a prefix of their own. `CHECKPOINT_RETIRE_HISTORIES` sets how many
/// concurrent histories with a retire run (default 32).
///
/// ```
/// use checkpoint_core::InMemoryCheckpointStore;
///
/// async fn store() -> InMemoryCheckpointStore {
///     InMemoryCheckpointStore::new()
/// }
///
/// mod admin {
///     checkpoint_conformance::admin_store_tests!(super::store);
/// }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! admin_store_tests {
    ($factory:path) => {
        $crate::__admin_cases! { __case_tests!($factory) }
        $crate::__exclusive_admin_cases! { __case_tests!($factory) }
    };
    ($factory:path, without_exclusive) => {
        $crate::__admin_cases! { __case_tests!($factory) }
    };
}

/// Expands to one named `#[test]` per clause of the lease contract
/// ([`LeaseStore`](checkpoint_core::LeaseStore): acquire, renew, release, leave, leases,
/// request_handover, expiry by one clock, epochs, and their ties to retire and purge), run
/// against the store that `factory` makes.
///
/// `factory` is the path of an `async fn() -> S` where `S: LeaseStore + CheckpointAdmin`.
/// Each test calls it **twice**, for two clients of the same store (two connections; for a
/// store that keeps state in the client, two processes' worth), so that a store that judges
/// expiry by each client's clock is caught. Use it in a module of its own.
///
/// ```
/// use std::sync::{Arc, OnceLock};
/// use checkpoint_core::InMemoryCheckpointStore;
///
/// // Both clients of a test must see one store: here, one in-memory store for the process.
/// async fn store() -> Arc<InMemoryCheckpointStore> {
///     static STORE: OnceLock<Arc<InMemoryCheckpointStore>> = OnceLock::new();
///     STORE.get_or_init(Default::default).clone()
/// }
///
/// mod leases {
///     checkpoint_conformance::lease_store_tests!(super::store);
/// }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! lease_store_tests {
    ($factory:path) => {
        $crate::__lease_cases! { __two_client_case_tests!($factory) }
    };
}

/// Calls back `$callback!{ ($($args)*) case... }` with the name of every parked-entry case.
#[doc(hidden)]
#[macro_export]
macro_rules! __parked_cases {
    ($callback:ident ! ($($args:tt)*)) => {
        $crate::$callback! { ($($args)*)
            parked_entries_are_listed_sorted
            parking_again_replaces_the_record
            retry_parked_marks_only_that_entry
            unpark_removes_only_that_entry
            parked_groups_are_separate
            parked_extremes_round_trip
            parked_invalid_inputs_are_rejected
        }
    };
}

/// Expands to one named `#[test]` per clause of the parked-entries contract
/// ([`ParkedStore`](checkpoint_core::parked::ParkedStore): park, parked, retry_parked,
/// unpark), run against the store that `factory` makes (`S: ParkedStore`). Use it in a module
/// of its own.
///
/// ```
/// use checkpoint_core::InMemoryCheckpointStore;
///
/// async fn store() -> InMemoryCheckpointStore {
///     InMemoryCheckpointStore::new()
/// }
///
/// mod parked {
///     checkpoint_conformance::parked_store_tests!(super::store);
/// }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! parked_store_tests {
    ($factory:path) => {
        $crate::__parked_cases! { __case_tests!($factory) }
    };
}

/// Calls back `$callback!{ ($($args)*) case... }` with the name of every source case.
#[doc(hidden)]
#[macro_export]
macro_rules! __source_cases {
    ($callback:ident ! ($($args:tt)*)) => {
        $crate::$callback! { ($($args)*)
            no_late_arrivals_under_concurrent_writers
            reads_from_every_position_agree
            sparse_positions_are_read_in_order
            empty_partitions_read_empty
            pages_respect_max_and_keep_their_last_entry
            wait_wakes_after_a_commit
            head_follows_the_readable_end
            heads_agree_with_head
            source_invalid_inputs_are_rejected
            partitions_grow_and_keep_their_entries
        }
    };
}

/// Expands to one `#[test]` per source case, each calling the setup in a runtime of its own.
#[doc(hidden)]
#[macro_export]
macro_rules! __source_case_tests {
    (($setup:path) $($case:ident)*) => {
        $(
            #[test]
            fn $case() {
                $crate::sources::__run_case(
                    stringify!($case),
                    ::std::any::type_name_of_val(&$setup),
                    async {
                        let log = $setup().await;
                        $crate::sources::cases::$case(&log).await
                    },
                );
            }
        )*
    };
}

/// Expands to one named `#[test]` per clause of the source contract (CONTRACT.md,
/// "Sources"), run against the log that `setup` makes.
///
/// `setup` is the path of an `async fn() -> L` where
/// `L: `[`SourceLog`](crate::sources::SourceLog): the source under test and a way to write to
/// its log in transactions. Each test builds its own tokio runtime, calls `setup` once inside
/// it for a **fresh, empty** log, and runs one case of [`sources::cases`](crate::sources::cases).
/// A failing test prints which clause broke and how. Use it in a module of its own. See
/// [`sources`](crate::sources) for the cases and the environment variables that size them.
///
/// ```
/// use checkpoint_conformance::sources::sequence::{SequenceSourceLog, WatermarkSource};
///
/// async fn log() -> SequenceSourceLog<WatermarkSource> {
///     SequenceSourceLog::watermark(2)
/// }
///
/// mod source {
///     checkpoint_conformance::source_tests!(super::log);
/// }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! source_tests {
    ($setup:path) => {
        $crate::__source_cases! { __source_case_tests!($setup) }
    };
}
