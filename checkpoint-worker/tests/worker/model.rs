//! The worker against a model: random histories of up to 8 workers over up to 64 partitions
//! (joins, graceful leaves, crashes, pauses past the deadline, failing and slow stores, stores
//! lagging beyond the renew interval, slow and hanging checkpoint writes), on
//! tokio's paused clock over the in-memory store, with the invariants of [`checker`] checked at
//! every tick of virtual time; and, in [`scenarios`], deterministic histories aimed at one
//! defect each (mutation testing, `scripts/mutants.sh`, shows what they and the random
//! histories catch).
//!
//! `CHECKPOINT_WORKER_HISTORIES` sets the number of histories (default 160: about 55 s of the
//! dev profile on two cores), `CHECKPOINT_SEED` replays a failing run's histories (the order
//! in which tasks run within one virtual instant may still differ from run to run: tokio's
//! `select!` polls its branches in a random order).

mod app;
mod checker;
mod history;
pub(crate) mod record;
mod scenarios;
pub(crate) mod store;
mod world;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use history::{History, histories, play};

fn histories_to_run() -> u32 {
    std::env::var("CHECKPOINT_WORKER_HISTORIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(160)
}

fn seed() -> u64 {
    std::env::var("CHECKPOINT_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..))
}

fn run_case(history: &History) -> Result<(), String> {
    let outcome = play(history);
    if outcome.violations.is_empty() {
        Ok(())
    } else {
        let lines: Vec<String> = outcome.violations.iter().map(ToString::to_string).collect();
        Err(lines.join("\n"))
    }
}

#[test]
fn workers_keep_their_promises() {
    let (cases, seed) = (histories_to_run(), seed());
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    );
    let strategy = histories();
    let mut exercised = checker::Exercised::default();
    for case in 0..cases {
        let mut tree = strategy.new_tree(&mut runner).unwrap();
        let outcome = play(&tree.current());
        if outcome.violations.is_empty() {
            exercised += outcome.exercised;
            continue;
        }
        // What the first play broke (a replay may not break it again: see the module doc).
        let lines: Vec<String> = outcome.violations.iter().map(ToString::to_string).collect();
        let first = lines.join("\n");
        let (mut why, mut failing) = (first.clone(), tree.current());
        // Shrink to a smaller failing history, within a bounded number of re-runs.
        for _ in 0..64 {
            if !tree.simplify() {
                break;
            }
            match run_case(&tree.current()) {
                Err(smaller) => (why, failing) = (smaller, tree.current()),
                Ok(()) => {
                    if !tree.complicate() {
                        break;
                    }
                }
            }
        }
        panic!(
            "history {case} of {cases} (CHECKPOINT_SEED={seed}) breaks the workers' promises:\n{first}\nshrunk to:\n{why}\nhistory: {failing:#?}"
        );
    }
    eprintln!("worker model: {cases} histories, seed {seed}, exercised {exercised:?}");
}
