//! Latency at concurrency 1: the floor, the raw client, the store and the hand-written save,
//! interleaved, so the load of the machine weighs on all of them alike.

use std::sync::Arc;

use crate::measure::{Op, Samples, Trips, interleaved_latency};
use crate::report::{self, Row, Target};
use crate::stores::{Run, floor_op, save_op, store_save_op, thousands, waited};
use crate::subject::{BenchError, Subject};

/// The samples of every operation timed together.
struct Latencies {
    floor: Samples,
    /// Empty when the backend has no commit floor.
    commit: Samples,
    raw: Samples,
    save: Samples,
    hand: Samples,
    load: Samples,
}

/// Measures the latency rows and targets; returns the floor's samples, which later rows are
/// compared with.
pub(super) async fn measure(run: &mut Run<'_>) -> Result<Samples, BenchError> {
    let latency_group = Arc::new(vec![run.group("latency")]);
    let plan = run.plan;
    eprintln!("checkpoint-bench: {}: latency", run.name);
    let ops = latency_ops(run.subject, &latency_group);
    // One untimed round first: connections, prepared statements, script cache.
    interleaved_latency(&ops, 1, 3).await?;
    let samples = interleaved_latency(&ops, plan.latency_rounds, plan.latency_per_round).await?;
    let find = |label: &str| -> Samples {
        ops.iter()
            .zip(&samples)
            .find(|((l, _), _)| *l == label)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    };
    let latencies = Latencies {
        floor: find("floor"),
        commit: find("commit floor"),
        raw: find("raw save"),
        save: find("save"),
        hand: find("hand-written save"),
        load: find("load"),
    };
    push_latency_rows(run, &latencies);
    push_latency_targets(run, &latencies);
    Ok(latencies.floor)
}

/// The operations timed, labelled, in the order they take turns: the floor (and the commit
/// floor where there is one), the raw client's save, the store's save, the hand-written save
/// and the store's load.
fn latency_ops(subject: &Subject, latency_group: &Arc<Vec<Arc<str>>>) -> Vec<(&'static str, Op)> {
    let mut ops: Vec<(&str, Op)> = vec![("floor", floor_op(subject))];
    if let Some(commit) = &subject.commit_floor {
        let commit = Arc::clone(commit);
        ops.push(("commit floor", Arc::new(move |_| commit())));
    }
    ops.push((
        "raw save",
        save_op(
            Arc::clone(&subject.raw_save),
            Arc::clone(latency_group),
            "raw",
        ),
    ));
    ops.push(("save", store_save_op(subject, Arc::clone(latency_group))));
    ops.push((
        "hand-written save",
        save_op(
            Arc::clone(&subject.hand_save),
            Arc::clone(latency_group),
            "hand",
        ),
    ));
    let load: Op = {
        let (store, g) = (Arc::clone(&subject.store), Arc::clone(&latency_group[0]));
        Arc::new(move |_| {
            let (store, g) = (Arc::clone(&store), Arc::clone(&g));
            Box::pin(async move {
                store.load(&g, "store", 0).await?;
                Ok(())
            })
        })
    };
    ops.push(("load", load));
    ops
}

/// How many times `b`'s median `a`'s is.
fn over(a: &Samples, b: &Samples) -> f64 {
    a.p50().as_secs_f64() / b.p50().as_secs_f64()
}

/// One row per operation, each against the floor and the saves against the raw client.
fn push_latency_rows(run: &mut Run<'_>, l: &Latencies) {
    let (name, trips) = (run.name, run.trips.clone());
    let latency_row = |workload: &str, s: &Samples, trips: Option<Trips>, raw: Option<&Samples>| {
        let mut row = Row::new(name, workload, thousands(s.len()));
        row.p50 = Some(s.p50());
        row.p99 = Some(s.p99());
        row.round_trips = run.rt(trips);
        row.vs_floor = Some(over(s, &l.floor));
        row.vs_raw = raw.map(|r| over(s, r));
        row
    };
    let floor_label = match name {
        "postgres" => "floor: `SELECT 1`",
        "redis" => "floor: `PING`",
        "dynamodb" => "floor: `GetItem` of a missing key",
        _ => "floor: `SELECT 1` on the pool",
    };
    let mut rows = vec![latency_row(floor_label, &l.floor, trips.floor, None)];
    if !l.commit.is_empty() {
        rows.push(latency_row(
            "commit floor: one-row `UPDATE` (a durable commit)",
            &l.commit,
            trips.commit_floor,
            None,
        ));
    }
    rows.push(latency_row(
        "raw client: the store's save statement/script",
        &l.raw,
        trips.raw_save,
        None,
    ));
    rows.push(latency_row(
        "**save** (store), concurrency 1",
        &l.save,
        trips.save,
        Some(&l.raw),
    ));
    rows.push(latency_row(
        "hand-written save (read, compare, write)",
        &l.hand,
        trips.hand_save,
        Some(&l.raw),
    ));
    rows.push(latency_row("**load** (store)", &l.load, trips.load, None));
    run.rows.extend(rows);
}

/// The save's targets: its round trips, its median against the raw client's, and against the
/// floor (a target on Redis, reported elsewhere; PostgreSQL's against a bare commit too).
fn push_latency_targets(run: &mut Run<'_>, l: &Latencies) {
    let name = run.name;
    if run.backend.counted.is_some() {
        run.targets.push(Target {
            backend: name,
            target: "save: 1 round trip".into(),
            measured: run.rt(run.trips.save),
            met: Some(waited(run.trips.save) == Some(1)),
        });
    }
    let save_vs_raw = over(&l.save, &l.raw);
    run.targets.push(Target {
        backend: name,
        target: "save p50 ≤ 1.10× raw client".into(),
        measured: format!(
            "{save_vs_raw:.2}× ({} vs {})",
            report::duration(l.save.p50()),
            report::duration(l.raw.p50())
        ),
        met: Some(save_vs_raw <= 1.10),
    });
    let save_vs_floor = over(&l.save, &l.floor);
    run.targets.push(match name {
        "redis" => Target {
            backend: name,
            target: "save p50 ≤ 1.3× `PING`".into(),
            measured: format!("{save_vs_floor:.2}×"),
            met: Some(save_vs_floor <= 1.3),
        },
        "postgres" => Target {
            backend: name,
            target: "save p50 vs `SELECT 1` and vs a bare commit (report both)".into(),
            measured: format!(
                "{save_vs_floor:.2}× `SELECT 1`, {:.2}× a one-row `UPDATE` commit",
                over(&l.save, &l.commit)
            ),
            met: None,
        },
        _ => Target {
            backend: name,
            target: "save p50 vs the floor (reported)".into(),
            measured: format!("{save_vs_floor:.2}×"),
            met: None,
        },
    });
}
