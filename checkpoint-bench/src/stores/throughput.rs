//! Throughput at 1, 16 and 64 workers, each on its own key (and group), the floor, the raw
//! client, the store and the hand-written save interleaved.

use std::sync::Arc;
use std::time::Duration;

use crate::CONCURRENCIES;
use crate::measure::{Op, interleaved_throughput};
use crate::report::{Row, Target};
use crate::stores::{Run, floor_op, save_op, store_save_op, thousands};
use crate::subject::{BenchError, Subject};

/// Operations done and the time they took, for the floor, the raw client's save, the store's
/// save and the hand-written save, in that order (the order of [`throughput_ops`]).
type Totals = [(u64, Duration)];

/// Measures the throughput rows and targets.
pub(super) async fn measure(run: &mut Run<'_>, max_concurrency: u32) -> Result<(), BenchError> {
    let plan = run.plan;
    let worker_groups: Arc<Vec<Arc<str>>> = Arc::new(
        (0..max_concurrency)
            .map(|w| run.group(&format!("w{w}")))
            .collect(),
    );
    let ops = throughput_ops(run.subject, &worker_groups);
    // Untimed: opens the pool's connections and creates every worker's rows.
    interleaved_throughput(
        &ops,
        max_concurrency,
        1,
        plan.throughput_slice.min(Duration::from_millis(300)),
    )
    .await?;
    for concurrency in CONCURRENCIES {
        eprintln!(
            "checkpoint-bench: {}: throughput at concurrency {concurrency}",
            run.name
        );
        let totals = interleaved_throughput(
            &ops,
            concurrency,
            plan.throughput_rounds,
            plan.throughput_slice,
        )
        .await?;
        push_throughput(run, concurrency, &totals);
    }
    Ok(())
}

/// The operations timed, labelled, in the order [`Totals`] reports them; each worker saves on
/// its own group.
fn throughput_ops(
    subject: &Subject,
    worker_groups: &Arc<Vec<Arc<str>>>,
) -> Vec<(&'static str, Op)> {
    vec![
        ("floor", floor_op(subject)),
        (
            "raw save",
            save_op(
                Arc::clone(&subject.raw_save),
                Arc::clone(worker_groups),
                "raw",
            ),
        ),
        ("save", store_save_op(subject, Arc::clone(worker_groups))),
        (
            "hand-written save",
            save_op(
                Arc::clone(&subject.hand_save),
                Arc::clone(worker_groups),
                "hand",
            ),
        ),
    ]
}

/// One concurrency's rows (each rate against the floor's, the saves' against the raw
/// client's) and its target: at 64 the store against the raw client, at 16 against the
/// hand-written save.
fn push_throughput(run: &mut Run<'_>, concurrency: u32, totals: &Totals) {
    let name = run.name;
    let per_sec: Vec<f64> = totals
        .iter()
        .map(|(done, took)| *done as f64 / took.as_secs_f64())
        .collect();
    let (floor_rate, raw_rate, store_rate, hand_rate) =
        (per_sec[0], per_sec[1], per_sec[2], per_sec[3]);
    for (label, (done, _), rate, vs_raw) in [
        ("floor", totals[0], floor_rate, None),
        ("raw client save", totals[1], raw_rate, None),
        (
            "**save** (store)",
            totals[2],
            store_rate,
            Some(store_rate / raw_rate),
        ),
        (
            "hand-written save",
            totals[3],
            hand_rate,
            Some(hand_rate / raw_rate),
        ),
    ] {
        let mut row = Row::new(
            name,
            format!("{label}, concurrency {concurrency}"),
            thousands(done as usize),
        );
        row.ops_per_sec = Some(rate);
        row.vs_floor = Some(rate / floor_rate);
        row.vs_raw = vs_raw;
        run.rows.push(row);
    }
    // The store's rate against another's: `at_least` times it is the target.
    let against = |target: &str, other_rate: f64, at_least: f64| Target {
        backend: name,
        target: target.into(),
        measured: format!(
            "{:.2}× ({store_rate:.0} vs {other_rate:.0})",
            store_rate / other_rate
        ),
        met: Some(store_rate / other_rate >= at_least),
    };
    if concurrency == 64 {
        run.targets.push(against(
            "saves/s at concurrency 64 ≥ 0.9× raw client",
            raw_rate,
            0.9,
        ));
    }
    if concurrency == 16 {
        run.targets.push(against(
            "saves/s at concurrency 16 ≥ 2× hand-written",
            hand_rate,
            2.0,
        ));
    }
}
