//! Deterministic histories, each aimed at one way a lease keeper goes wrong: the correct
//! worker plays every one of them without a violation. That they catch those defects is shown
//! by mutation testing (`scripts/mutants.sh`, cargo-mutants over `src/keeper/` and
//! `src/balance.rs`, results in `docs/mutants.md`), not by defects planted in the product.

use super::checker::{STABLE_AFTER, Violation};
use super::history::{Event, History, Step, play};

/// Long enough for the state before the next event to be checked stable.
fn settle() -> u64 {
    STABLE_AFTER.as_millis() as u64 + 200
}

fn step(event: Event, wait_ms: u64) -> Step {
    Step { event, wait_ms }
}

/// Plays `history` with the worker and asserts it keeps every promise; `aim` names the
/// defect the history is built to expose and the invariant that would catch it.
fn kept(history: &History, aim: &str) {
    let outcome = play(history);
    assert!(
        outcome.violations.is_empty(),
        "the worker breaks a promise in the history aimed at {aim}: {:#?}",
        outcome.violations
    );
}

/// A worker frozen past its local deadline: one that ignored the deadline would keep believing
/// it holds its partitions while the other takes them over (two holders).
#[test]
fn a_worker_frozen_past_its_deadline_stops_believing_it_holds() {
    let history = History {
        partitions: 8,
        initial: 2,
        steps: vec![
            // No latency: only a wait for the stable state.
            step(Event::Slow(0, 0), settle()),
            step(Event::Pause(0, 3_000), 3_500),
        ],
    };
    kept(&history, "ignoring the local deadline (two holders)");
}

/// A slow reply (120 ms, longer than the other worker's renew interval) would lengthen the
/// belief of a worker that counted its lease from the reply, past the store's expiry: when its
/// renews fail, the other takes the partitions over while it still believes (two holders).
#[test]
fn a_slow_reply_does_not_lengthen_the_belief() {
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
    kept(&history, "counting the lease from the reply (two holders)");
}

/// A worker that joins a fully held subscription gets nothing unless it asks (unbalanced).
#[test]
fn a_joiner_of_a_fully_held_subscription_gets_its_share() {
    let history = History {
        partitions: 8,
        initial: 2,
        steps: vec![step(Event::Join, settle()), step(Event::Join, settle())],
    };
    kept(&history, "never asking an owner (unbalanced)");
}

/// An owner on a slow store (60 ms each way) hands partitions over to a worker that joins: one
/// that released before its final write would let the joiner (looking again every few ms while
/// it waits) acquire and load the checkpoint before that write lands (a handover not exact). A
/// shutdown would not show it: the others claim only once the leaver has left.
#[test]
fn a_handover_on_a_slow_store_is_exact() {
    let history = History {
        partitions: 8,
        initial: 2,
        steps: vec![
            step(Event::Slow(0, 60), settle()),
            step(Event::Join, settle()),
        ],
    };
    kept(
        &history,
        "releasing before the final write (handover not exact)",
    );
}

/// Two workers, one on a slow store (40 ms each way): a fast one that claimed every free
/// partition would hand over what the slow one asks for, then claim it back before the slow
/// one's acquire lands, again at every request: they would never balance.
#[test]
fn a_worker_on_a_slow_store_still_gets_its_share() {
    let history = History {
        partitions: 12,
        initial: 2,
        steps: vec![step(Event::Slow(0, 40), settle())],
    };
    kept(&history, "claiming beyond the share (unbalanced)");
}

/// 64 partitions over five workers, then six, seven, eight: rebalanced eagerly (every worker
/// handing everything over when the live workers change, like Kafka's eager protocol) the
/// fleet would balance again, but a join would move far more than its share.
#[test]
fn each_join_moves_only_its_share() {
    let history = History {
        partitions: 64,
        initial: 5,
        steps: vec![
            step(Event::Join, settle()),
            step(Event::Join, settle()),
            step(Event::Join, settle()),
        ],
    };
    kept(&history, "eager rebalancing (a join moves too much)");
}

/// Invariant 2 (a crashed worker's partitions are taken over within the bound) shown able to
/// fail on the correct worker: the survivor's store takes 100 ms each
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
    let outcome = play(&history);
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

/// Found by a CI run (4 December): two owners whose checkpoint writes hang (577 and 835 ms,
/// past the drain timeout) hand partitions over to two workers that join 160 ms apart. Each
/// handover waits for the owner's final write, and the joiners' second partitions come a round
/// after their first: balance 2.1 s after the last join, past [`STABLE_AFTER`]. The worker
/// keeps every promise; the stable window grows with the slowest live writer
/// (`Checker::stable_window`), and the last state is checked.
#[test]
fn handovers_from_owners_with_hanging_writes() {
    let history = History {
        partitions: 8,
        initial: 1,
        steps: vec![
            step(Event::SlowWrites(0, 577), 2_638),
            step(Event::Join, 496),
            step(Event::SlowWrites(1, 835), 2_597),
            step(Event::Join, 160),
            step(Event::Join, 2_604),
        ],
    };
    let outcome = play(&history);
    assert!(
        outcome.violations.is_empty(),
        "the worker breaks a promise with owners whose writes hang: {:#?}",
        outcome.violations
    );
    assert!(
        outcome.exercised.stable_ticks > 0,
        "the last state was never checked stable"
    );
}

/// Found by a CI run (4 December): a worker's store fails for 2.3 s (its heartbeat expires
/// and the worker loses its partition at its local deadline), then lags 188 ms each way. The
/// renew sent just before the failure ends learns 376 ms later that the heartbeat is gone;
/// meanwhile the keeper's acquire, sent after that renew went out and answered just after its
/// `NotHeld`, has started a new heartbeat and granted the partition again. That late
/// `NotHeld` used to end the new grant too (a second loss, 16 ms past the failure's window,
/// which the checker then excused by the lag's round trip). A reply to a request sent before a
/// grant says nothing of that grant: the worker loses the partition once, at its deadline,
/// and keeps the new grant (invariant 6 with no allowance for the lag).
#[test]
fn a_late_not_held_does_not_end_a_later_grant() {
    let history = History {
        partitions: 1,
        initial: 1,
        steps: vec![
            step(Event::SlowWrites(0, 0), 129),
            step(
                Event::Fail {
                    worker: 0,
                    ms: 2_263,
                    timeout: true,
                },
                2_248,
            ),
            step(
                Event::Lag {
                    worker: 0,
                    ms: 188,
                    for_ms: 1_839,
                },
                2_588,
            ),
        ],
    };
    let outcome = play(&history);
    assert!(
        outcome.violations.is_empty(),
        "a late NotHeld ended a later grant: {:#?}",
        outcome.violations
    );
    assert_eq!(
        outcome.exercised.losses, 1,
        "the worker must lose its partition once (at its deadline, in the failure), not again \
         when the renew sent before the new grant answers NotHeld: {:?}",
        outcome.exercised
    );
}

/// Found by a CI run (4 December, seed 10482034314218412418, shrunk): of three workers two
/// leave and the last crashes; the next joins 1.16 s after the crash. The crash's window
/// (a lease duration, a renew interval and an allowance: 1.35 s) counted from the crash left
/// the joiner 0.19 s and reported its partition not owned again; nobody could own it before
/// someone joined, so the window now starts at that join (`Checker::crashed`).
#[test]
fn a_crash_with_no_worker_left_waits_for_the_next_join() {
    let history = History {
        partitions: 1,
        initial: 3,
        steps: vec![
            step(Event::Leave(0), 0),
            step(Event::Leave(0), 140),
            step(Event::Crash(7), 220),
            step(Event::Slow(7, 0), 566),
            step(
                Event::Fail {
                    worker: 7,
                    ms: 429,
                    timeout: true,
                },
                538,
            ),
            step(Event::Join, 53),
        ],
    };
    kept(
        &history,
        "a crash's window counted before anyone could take over",
    );
}
