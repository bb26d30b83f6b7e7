//! Each planted defect, caught by the invariant it breaks: a deterministic history that the
//! correct worker plays without a violation, and the mutated worker with the violation
//! expected (and only the invariants' own checks decide).

use checkpoint_worker::Mutation;

use super::checker::{STABLE_AFTER, Violation};
use super::history::{Event, History, Step, play};

/// Long enough for the state before the next event to be checked stable.
fn settle() -> u64 {
    STABLE_AFTER.as_millis() as u64 + 200
}

fn step(event: Event, wait_ms: u64) -> Step {
    Step { event, wait_ms }
}

/// Plays `history` with the correct worker (no violation allowed), then with `mutation`, and
/// asserts that the mutated run reports a violation `expected` accepts.
fn caught(history: &History, mutation: Mutation, expected: fn(&Violation) -> bool) {
    let control = play(history, None);
    assert!(
        control.violations.is_empty(),
        "the correct worker breaks a promise in the scenario for {mutation:?}: {:#?}",
        control.violations
    );
    let mutated = play(history, Some(mutation));
    let hits: Vec<String> = mutated
        .violations
        .iter()
        .filter(|violation| expected(violation))
        .map(ToString::to_string)
        .collect();
    assert!(
        !hits.is_empty(),
        "{mutation:?} was not caught; violations: {:#?}",
        mutated.violations
    );
    eprintln!("{mutation:?} caught: {}", hits[0]);
}

/// A worker whose store hangs past its local deadline keeps believing it holds its partitions
/// while the other takes them over.
#[test]
fn ignoring_the_deadline_is_caught_by_two_holders() {
    let history = History {
        partitions: 8,
        initial: 2,
        steps: vec![
            // No latency: only a wait for the stable state.
            step(Event::Slow(0, 0), settle()),
            step(Event::Pause(0, 3_000), 3_500),
        ],
    };
    caught(&history, Mutation::IgnoresTheDeadline, |violation| {
        matches!(violation, Violation::TwoHolders { .. })
    });
}

/// A slow reply (120 ms, longer than the other worker's renew interval) lengthens the belief
/// of a worker that counts its lease from the reply, past the store's expiry: when its renews
/// fail, the other takes the partitions over while it still believes.
#[test]
fn trusting_the_server_duration_is_caught_by_two_holders() {
    let history = History {
        partitions: 8,
        initial: 2,
        steps: vec![
            step(Event::Slow(0, 120), settle()),
            step(
                Event::Fail {
                    worker: 0,
                    ms: 3_000,
                    timeout: true,
                },
                3_500,
            ),
        ],
    };
    caught(&history, Mutation::TrustsTheServerDuration, |violation| {
        matches!(violation, Violation::TwoHolders { .. })
    });
}

/// A worker that joins a fully held subscription gets nothing unless it asks.
#[test]
fn never_asking_is_caught_by_the_balance() {
    let history = History {
        partitions: 8,
        initial: 2,
        steps: vec![step(Event::Join, settle()), step(Event::Join, settle())],
    };
    caught(&history, Mutation::NeverAsks, |violation| {
        matches!(violation, Violation::Unbalanced { .. })
    });
}

/// An owner on a slow store (60 ms each way) hands partitions over to a worker that joins:
/// it releases, and the joiner (looking again every few ms while it waits) acquires and loads
/// the checkpoint, before the owner's final write lands. (A shutdown would not show it: the
/// others claim only once the leaver has left, after all its final writes.)
#[test]
fn releasing_before_the_final_write_is_caught_by_the_handover() {
    let history = History {
        partitions: 8,
        initial: 2,
        steps: vec![
            step(Event::Slow(0, 60), settle()),
            step(Event::Join, settle()),
        ],
    };
    caught(
        &history,
        Mutation::ReleasesBeforeTheFinalWrite,
        |violation| matches!(violation, Violation::HandoverNotExact { .. }),
    );
}

/// Two workers, one on a slow store (40 ms each way): the fast one hands over what the slow
/// one asks for, then claims it back at its next round, before the slow one's acquire lands,
/// and again at every request: they never balance.
#[test]
fn claiming_everything_is_caught_by_the_balance() {
    let history = History {
        partitions: 12,
        initial: 2,
        steps: vec![step(Event::Slow(0, 40), settle())],
    };
    caught(&history, Mutation::ClaimsEverything, |violation| {
        matches!(violation, Violation::Unbalanced { .. })
    });
}

/// 64 partitions over five workers, then six, seven, eight, rebalanced eagerly (every worker
/// hands everything over when the live workers change, then claims its share again, like
/// Kafka's eager protocol): the fleet balances again, but a join moved far more than its
/// share.
#[test]
fn eager_rebalancing_is_caught_by_the_moves_of_a_join() {
    let history = History {
        partitions: 64,
        initial: 5,
        steps: vec![
            step(Event::Join, settle()),
            step(Event::Join, settle()),
            step(Event::Join, settle()),
        ],
    };
    caught(&history, Mutation::EagerRebalance, |violation| {
        matches!(violation, Violation::JoinMovedTooMuch { .. })
    });
}

/// None of the planted defects delays a takeover (each of them takes partitions sooner or
/// keeps them longer, but never leaves a crashed worker's partitions free), so invariant 2 is
/// shown able to fail on the correct worker instead: the survivor's store takes 100 ms each
/// way, far beyond the 15 ms the allowance counts, so its round (renew, table, acquire, load)
/// ends well after the bound.
#[test]
fn a_takeover_later_than_the_bound_is_caught() {
    let history = History {
        partitions: 8,
        initial: 2,
        steps: vec![
            step(Event::Slow(1, 100), settle()),
            step(Event::Crash(0), 3_000),
        ],
    };
    let outcome = play(&history, None);
    let late: Vec<String> = outcome
        .violations
        .iter()
        .filter(|violation| matches!(violation, Violation::NotReowned { .. }))
        .map(ToString::to_string)
        .collect();
    assert!(
        !late.is_empty(),
        "a late takeover was not caught: {:#?}",
        outcome.violations
    );
    eprintln!("a late takeover caught: {}", late[0]);
}
