//! The history checker finds each kind of violation, and accepts what a max-register allows.

use std::collections::BTreeMap;

use checkpoint_conformance::history::{Call, Event, History, HistoryChecker, Key, Outcome};

const K: Key = Key(0);
const OTHER: Key = Key(1);

fn event(owner: usize, call: Call, start: u64, end: u64, outcome: Outcome) -> Event {
    Event {
        owner,
        zombie: false,
        call,
        start,
        end,
        outcome,
    }
}

fn check(events: Vec<Event>, final_state: &[(Key, u64)]) -> Result<(), String> {
    let history = History { events };
    HistoryChecker::default().check(
        &history,
        &final_state.iter().copied().collect::<BTreeMap<_, _>>(),
    )
}

#[test]
fn accepts_a_read_that_sees_a_concurrent_save_or_not() {
    for seen in [None, Some(5)] {
        let events = vec![
            event(0, Call::Save(K, 5), 0, 3, Outcome::Saved),
            event(1, Call::Load(K), 1, 2, Outcome::Loaded(seen)),
        ];
        assert_eq!(
            check(events, &[(K, 5)]),
            Ok(()),
            "a read overlapping the save may see {seen:?}"
        );
    }
}

#[test]
fn accepts_a_zombie_save_that_changes_nothing() {
    let events = vec![
        event(0, Call::Save(K, 100), 0, 1, Outcome::Saved),
        event(1, Call::Save(K, 30), 2, 3, Outcome::Saved),
        event(0, Call::Load(K), 4, 5, Outcome::Loaded(Some(100))),
    ];
    assert_eq!(check(events, &[(K, 100)]), Ok(()));
}

#[test]
fn rejects_a_final_value_below_the_highest_acknowledged() {
    let events = vec![
        event(0, Call::Save(K, 100), 0, 1, Outcome::Saved),
        event(1, Call::Save(K, 30), 2, 3, Outcome::Saved),
    ];
    let violation = check(events, &[(K, 30)]).expect_err("a lost update");
    assert!(
        violation.contains("highest acknowledged save was Some(100)"),
        "{violation}"
    );
}

#[test]
fn rejects_a_value_never_written() {
    let events = vec![
        event(0, Call::Save(K, 10), 0, 1, Outcome::Saved),
        event(1, Call::Load(K), 2, 3, Outcome::Loaded(Some(11))),
    ];
    let violation = check(events, &[(K, 10)]).expect_err("a phantom value");
    assert!(
        violation.contains("no save started before it returned had written"),
        "{violation}"
    );
}

#[test]
fn rejects_a_value_read_before_its_save_started() {
    let events = vec![
        event(1, Call::Load(K), 0, 1, Outcome::Loaded(Some(10))),
        event(0, Call::Save(K, 10), 2, 3, Outcome::Saved),
    ];
    assert!(check(events, &[(K, 10)]).is_err(), "a read from the future");
}

#[test]
fn rejects_a_read_below_a_save_acknowledged_before_it() {
    let events = vec![
        event(0, Call::Save(K, 10), 0, 1, Outcome::Saved),
        event(0, Call::Save(K, 20), 2, 3, Outcome::Saved),
        event(1, Call::Load(K), 4, 5, Outcome::Loaded(Some(10))),
    ];
    let violation = check(events, &[(K, 20)]).expect_err("a stale read");
    assert!(
        violation.contains("acknowledged before the read started"),
        "{violation}"
    );
}

#[test]
fn rejects_an_absent_read_after_an_acknowledged_save() {
    let events = vec![
        event(0, Call::Save(K, 10), 0, 1, Outcome::Saved),
        event(1, Call::List, 2, 3, Outcome::Listed(vec![])),
    ];
    assert!(
        check(events, &[(K, 10)]).is_err(),
        "a list missing a saved key"
    );
}

#[test]
fn rejects_reads_that_go_backwards() {
    // Both saves overlap both reads, so each read alone is allowed; their order is not.
    let events = vec![
        event(0, Call::Save(K, 10), 0, 9, Outcome::Saved),
        event(1, Call::Save(K, 20), 1, 9, Outcome::Saved),
        event(2, Call::Load(K), 2, 3, Outcome::Loaded(Some(20))),
        event(2, Call::Load(K), 4, 5, Outcome::Loaded(Some(10))),
    ];
    let violation = check(events, &[(K, 20)]).expect_err("a read going backwards");
    assert!(violation.contains("went backwards"), "{violation}");
}

#[test]
fn rejects_a_key_that_was_never_saved() {
    let events = vec![
        event(0, Call::Save(K, 10), 0, 1, Outcome::Saved),
        event(
            1,
            Call::List,
            2,
            3,
            Outcome::Listed(vec![Ok((K, 10)), Ok((OTHER, 10))]),
        ),
    ];
    assert!(
        check(events, &[(K, 10)]).is_err(),
        "a listed key nobody saved"
    );
}

#[test]
fn rejects_a_failed_call_unless_failures_are_allowed() {
    let events = vec![
        event(
            0,
            Call::Save(K, 10),
            0,
            1,
            Outcome::Failed("connection reset".into()),
        ),
        event(0, Call::Save(K, 5), 2, 3, Outcome::Saved),
    ];
    let history = History { events };
    // The failed save may or may not have landed: both finals are allowed when failures are.
    let allowing = HistoryChecker {
        allow_failures: true,
    };
    for final_value in [5, 10] {
        assert_eq!(
            allowing.check(&history, &BTreeMap::from([(K, final_value)])),
            Ok(())
        );
    }
    assert!(allowing.check(&history, &BTreeMap::from([(K, 4)])).is_err());
    assert!(
        HistoryChecker::default()
            .check(&history, &BTreeMap::from([(K, 5)]))
            .is_err()
    );
}
