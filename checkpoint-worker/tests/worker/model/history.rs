//! Random histories of joins, graceful leaves, crashes, pauses past the deadline, failing,
//! slow and lagging stores, slow and hanging checkpoint writes, and how a history is played.

use std::time::Duration;

use proptest::prelude::*;

use super::checker::{Exercised, STABLE_AFTER, Violation};
use super::world::World;

/// Something that happens to the workers. A worker is picked as the `n`-th live one (modulo
/// their number), so that every history stays meaningful while it shrinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Join,
    /// `worker.shutdown()`.
    Leave(usize),
    /// `worker.crash()`, and its application's tasks aborted.
    Crash(usize),
    /// Its store requests hang for so many ms (past the local deadline: a zombie).
    Pause(usize, u64),
    /// Its store requests fail for so many ms, as `Timeout` errors or else `Backend` ones.
    Fail {
        worker: usize,
        ms: u64,
        timeout: bool,
    },
    /// Its store takes so many ms per request, and again per reply.
    Slow(usize, u64),
    /// Its store lags: every request and reply takes so many ms more (up to twice the renew
    /// interval each way), for `for_ms`.
    Lag {
        worker: usize,
        ms: u64,
        for_ms: u64,
    },
    /// Its checkpoint writes take so many ms: beyond the renew interval but well within the
    /// final write's budget, or hanging past the drain timeout and the budget.
    SlowWrites(usize, u64),
}

/// An event, then a wait before the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub event: Event,
    pub wait_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct History {
    pub partitions: u32,
    /// Workers started at once at the beginning.
    pub initial: usize,
    pub steps: Vec<Step>,
}

/// A wait: mostly short (things overlap), sometimes long enough for a stable state.
fn wait_ms() -> impl Strategy<Value = u64> {
    let stable = STABLE_AFTER.as_millis() as u64;
    prop_oneof![
        3 => 0u64..600,
        2 => (stable + 50)..(stable + 600),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => Just(Event::Join),
        2 => (0usize..8).prop_map(Event::Leave),
        2 => (0usize..8).prop_map(Event::Crash),
        // Shorter and longer than the local deadline (about a lease duration).
        2 => ((0usize..8), prop_oneof![100u64..800, 1_200u64..3_000])
            .prop_map(|(worker, ms)| Event::Pause(worker, ms)),
        2 => ((0usize..8), prop_oneof![100u64..800, 1_200u64..3_000], any::<bool>())
            .prop_map(|(worker, ms, timeout)| Event::Fail { worker, ms, timeout }),
        2 => ((0usize..8), prop_oneof![Just(0u64), 1u64..=15])
            .prop_map(|(worker, ms)| Event::Slow(worker, ms)),
        2 => ((0usize..8), 20u64..=200, 300u64..=2_000)
            .prop_map(|(worker, ms, for_ms)| Event::Lag { worker, ms, for_ms }),
        2 => ((0usize..8), prop_oneof![Just(0u64), 20u64..=150, 400u64..=1_500])
            .prop_map(|(worker, ms)| Event::SlowWrites(worker, ms)),
    ]
}

pub fn histories() -> impl Strategy<Value = History> {
    let step = (event(), wait_ms()).prop_map(|(event, wait_ms)| Step { event, wait_ms });
    (1u32..=64, 1usize..=4, prop::collection::vec(step, 1..14)).prop_map(
        |(partitions, initial, steps)| History {
            partitions,
            initial,
            steps,
        },
    )
}

/// What a played history broke, and how much it exercised the invariants.
#[derive(Debug)]
pub struct Outcome {
    pub violations: Vec<Violation>,
    pub exercised: Exercised,
}

/// Plays `history` on a fresh current-thread runtime with a paused clock, then lets the
/// workers settle (so the last state is checked stable).
pub fn play(history: &History) -> Outcome {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime")
        .block_on(async {
            let mut world = World::new(history.partitions);
            for _ in 0..history.initial {
                world.join();
            }
            for step in &history.steps {
                apply(&mut world, step.event);
                world.run_for(Duration::from_millis(step.wait_ms)).await;
            }
            world.settle().await;
            Outcome {
                violations: world.checker.violations.clone(),
                exercised: world.checker.exercised,
            }
        })
}

pub fn apply(world: &mut World, event: Event) {
    let ms = Duration::from_millis;
    match event {
        Event::Join => {
            world.join();
        }
        Event::Leave(pick) => world.pick(pick).into_iter().for_each(|w| world.leave(w)),
        Event::Crash(pick) => world.pick(pick).into_iter().for_each(|w| world.crash(w)),
        Event::Pause(pick, pause) => {
            if let Some(worker) = world.pick(pick) {
                world.pause(worker, ms(pause));
            }
        }
        Event::Fail {
            worker,
            ms: failing,
            timeout,
        } => {
            if let Some(worker) = world.pick(worker) {
                world.fail(worker, ms(failing), timeout);
            }
        }
        Event::Slow(pick, latency) => {
            if let Some(worker) = world.pick(pick) {
                world.slow(worker, ms(latency));
            }
        }
        Event::Lag {
            worker,
            ms: lag,
            for_ms,
        } => {
            if let Some(worker) = world.pick(worker) {
                world.lag(worker, ms(lag), ms(for_ms));
            }
        }
        Event::SlowWrites(pick, latency) => {
            if let Some(worker) = world.pick(pick) {
                world.slow_writes(worker, ms(latency));
            }
        }
    }
}
