//! Latency at concurrency 1: the floor, the raw client, the store and the hand-written save,
//! interleaved, so the load of the machine weighs on all of them alike.

use std::sync::Arc;

use crate::measure::{Op, Samples, Trips, interleaved_latency};
use crate::report::{self, Row, Target};
use crate::stores::{Run, floor_op, save_op, store_save_op, thousands, waited};
use crate::subject::BenchError;

/// Measures the latency rows and targets; returns the floor's samples, which later rows are
/// compared with.
pub(super) async fn measure(run: &mut Run<'_>) -> Result<Samples, BenchError> {
    let latency_group = Arc::new(vec![run.group("latency")]);
    let (name, subject, plan, backend) = (run.name, run.subject, run.plan, run.backend);
    let trips = run.trips.clone();
    let rt = |count: Option<Trips>| run.rt(count);
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    eprintln!("checkpoint-bench: {name}: latency");
    let mut ops: Vec<(&str, Op)> = vec![("floor", floor_op(subject))];
    if let Some(commit) = &subject.commit_floor {
        let commit = Arc::clone(commit);
        ops.push(("commit floor", Arc::new(move |_| commit())));
    }
    ops.push((
        "raw save",
        save_op(
            Arc::clone(&subject.raw_save),
            Arc::clone(&latency_group),
            "raw",
        ),
    ));
    ops.push(("save", store_save_op(subject, Arc::clone(&latency_group))));
    ops.push((
        "hand-written save",
        save_op(
            Arc::clone(&subject.hand_save),
            Arc::clone(&latency_group),
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
    let floor = find("floor");
    let raw = find("raw save");
    let store_save = find("save");
    let hand = find("hand-written save");
    let load = find("load");
    let over = |a: &Samples, b: &Samples| a.p50().as_secs_f64() / b.p50().as_secs_f64();
    let latency_row = |workload: &str, s: &Samples, trips: Option<Trips>, raw: Option<&Samples>| {
        let mut row = Row::new(name, workload, thousands(s.len()));
        row.p50 = Some(s.p50());
        row.p99 = Some(s.p99());
        row.round_trips = rt(trips);
        row.vs_floor = Some(over(s, &floor));
        row.vs_raw = raw.map(|r| over(s, r));
        row
    };
    let floor_label = match name {
        "postgres" => "floor: `SELECT 1`",
        "redis" => "floor: `PING`",
        "dynamodb" => "floor: `GetItem` of a missing key",
        _ => "floor: `SELECT 1` on the pool",
    };
    rows.push(latency_row(floor_label, &floor, trips.floor, None));
    let commit = find("commit floor");
    if commit.len() > 0 {
        rows.push(latency_row(
            "commit floor: one-row `UPDATE` (a durable commit)",
            &commit,
            trips.commit_floor,
            None,
        ));
    }
    rows.push(latency_row(
        "raw client: the store's save statement/script",
        &raw,
        trips.raw_save,
        None,
    ));
    rows.push(latency_row(
        "**save** (store), concurrency 1",
        &store_save,
        trips.save,
        Some(&raw),
    ));
    rows.push(latency_row(
        "hand-written save (read, compare, write)",
        &hand,
        trips.hand_save,
        Some(&raw),
    ));
    rows.push(latency_row("**load** (store)", &load, trips.load, None));

    if backend.counted.is_some() {
        targets.push(Target {
            backend: name,
            target: "save: 1 round trip".into(),
            measured: rt(trips.save),
            met: Some(waited(trips.save) == Some(1)),
        });
    }
    let save_vs_raw = over(&store_save, &raw);
    targets.push(Target {
        backend: name,
        target: "save p50 ≤ 1.10× raw client".into(),
        measured: format!(
            "{save_vs_raw:.2}× ({} vs {})",
            report::duration(store_save.p50()),
            report::duration(raw.p50())
        ),
        met: Some(save_vs_raw <= 1.10),
    });
    let save_vs_floor = over(&store_save, &floor);
    match name {
        "redis" => targets.push(Target {
            backend: name,
            target: "save p50 ≤ 1.3× `PING`".into(),
            measured: format!("{save_vs_floor:.2}×"),
            met: Some(save_vs_floor <= 1.3),
        }),
        "postgres" => targets.push(Target {
            backend: name,
            target: "save p50 vs `SELECT 1` and vs a bare commit (report both)".into(),
            measured: format!(
                "{save_vs_floor:.2}× `SELECT 1`, {:.2}× a one-row `UPDATE` commit",
                over(&store_save, &commit)
            ),
            met: None,
        }),
        _ => targets.push(Target {
            backend: name,
            target: "save p50 vs the floor (reported)".into(),
            measured: format!("{save_vs_floor:.2}×"),
            met: None,
        }),
    }
    run.rows.extend(rows);
    run.targets.extend(targets);
    Ok(floor)
}
