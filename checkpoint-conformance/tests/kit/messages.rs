//! A failing case says where to look: the store, the group, and every wrong key with its
//! expected and stored positions.

use checkpoint_conformance::{__private::run_case, cases};

use crate::broken::{BrokenStore, Flaw};

#[test]
fn a_lost_update_names_the_store_the_group_and_every_wrong_key() {
    let panic = std::panic::catch_unwind(|| {
        run_case("save_all_repeated_keys_keep_highest", async {
            let store = BrokenStore::new(Flaw::SaveAllKeepsFirst);
            cases::save_all_repeated_keys_keep_highest(&store)
                .await
                .map_err(|failure| failure.in_store(std::any::type_name_of_val(&store)))
        });
    })
    .expect_err("a store that keeps the first of repeated keys fails the case");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    for expected in [
        "contract clause `save_all_repeated_keys_keep_highest` broken",
        "store `kit::broken::BrokenStore`",
        "1 wrong key(s) in group \"ck-repeated-",
        "(\"s\", 0): expected 9, stored 5",
        "groups of this case, the last one last: [\"ck-repeated-",
    ] {
        assert!(
            message.contains(expected),
            "{expected:?} not in:\n{message}"
        );
    }
}

#[test]
fn every_wrong_key_of_a_large_batch_is_listed() {
    let panic = std::panic::catch_unwind(|| {
        run_case("save_all_of_ten_thousand", async {
            let store = BrokenStore::new(Flaw::Overwrites);
            cases::save_all_of_ten_thousand(&store).await
        });
    })
    .expect_err("a store that overwrites moves half of a batch back");
    let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        message.contains("5000 wrong key(s) in group \"ck-ten-thousand-"),
        "{}",
        &message[..message.len().min(2_000)]
    );
    // Key ("s1", 0) was saved at 3, then at 2 by the second batch: an overwrite moved it back.
    assert!(
        message.contains("(\"s1\", 0): expected 3, stored 2"),
        "{}",
        &message[..message.len().min(2_000)]
    );
    assert_eq!(message.matches(": expected ").count(), 5000);
}
