//! `save_all` of 1,000 and 10,000 moving existing checkpoints forward, the larger as single
//! saves one after the other, and `list` of it beside the raw query.

use std::sync::Arc;
use std::time::Duration;

use crate::measure::{Samples, Trips, time_once};
use crate::report::{self, Row, Target};
use crate::stores::{Run, batch, thousands, waited};
use crate::subject::{BenchError, context, reserve_positions};

/// Measures the batch and list rows and targets.
pub(super) async fn measure(run: &mut Run<'_>, floor: &Samples) -> Result<(), BenchError> {
    let backend = run.backend;
    for (slot, &n) in backend.batch_sizes.iter().enumerate() {
        eprintln!("checkpoint-bench: {}: save_all of {n}", run.name);
        let g = run.group(&format!("batch-{n}"));
        let p50 = save_all_rows(run, floor, &g, slot, n).await?;
        // The larger batch (10,000, fewer on an emulator) alone is also timed as single saves
        // and listed.
        if slot == 1 {
            let as_singles = single_saves_row(run, &g, n).await?;
            push_speedup_targets(run, slot, n, p50, as_singles);
            eprintln!("checkpoint-bench: {}: list of {n}", run.name);
            list_rows(run, floor, &g, n).await?;
        }
    }
    Ok(())
}

/// The `save_all` of `n` row, and the raw bulk floor's row and target when the backend has
/// one; returns the median of `save_all`.
async fn save_all_rows(
    run: &mut Run<'_>,
    floor: &Samples,
    g: &Arc<str>,
    slot: usize,
    n: usize,
) -> Result<Duration, BenchError> {
    let (name, reps) = (run.name, run.plan.batch_reps[slot]);
    // Untimed: creates the rows, so the timed calls move existing checkpoints forward,
    // the steady state.
    run.subject
        .store
        .save_all(g, &batch(n, reserve_positions(n as u64)))
        .await
        .map_err(context("save_all"))?;
    let Timed {
        save: p50,
        bulk,
        script,
    } = time_batches(run, g, n, reps).await?;
    let mut row = Row::new(
        name,
        format!("**save_all** of {}", thousands(n)),
        format!("{reps} calls"),
    );
    row.p50 = Some(p50);
    row.ops_per_sec = Some(n as f64 / p50.as_secs_f64());
    row.round_trips = run.rt(run.trips.save_all[slot]);
    row.vs_floor = Some(p50.as_secs_f64() / floor.p50().as_secs_f64());
    row.vs_raw = bulk.map(|bulk| p50.as_secs_f64() / bulk.as_secs_f64());
    run.rows.push(row);
    if let Some(bulk) = bulk {
        push_bulk_floor(run, floor, slot, n, p50, bulk);
        if let Some(script) = script {
            push_script_floor(run, floor, slot, n, (p50, bulk, script));
        }
    }
    Ok(p50)
}

/// The raw bulk write's row, and for the larger batch the target `save_all` is held to
/// against it.
fn push_bulk_floor(
    run: &mut Run<'_>,
    floor: &Samples,
    slot: usize,
    n: usize,
    p50: Duration,
    bulk: Duration,
) {
    let name = run.name;
    let mut row = Row::new(
        name,
        format!(
            "raw bulk write of the same {} (no forward-only condition)",
            thousands(n)
        ),
        format!("{} calls", run.plan.batch_reps[slot]),
    );
    row.p50 = Some(bulk);
    row.ops_per_sec = Some(n as f64 / bulk.as_secs_f64());
    row.vs_floor = Some(bulk.as_secs_f64() / floor.p50().as_secs_f64());
    run.rows.push(row);
    if slot == 1 {
        let ratio = p50.as_secs_f64() / bulk.as_secs_f64();
        run.targets.push(Target {
            backend: name,
            target: format!("save_all of {} ≤ 1.5× its raw bulk floor", thousands(n)),
            measured: format!(
                "{ratio:.2}× ({} vs {})",
                report::duration(p50),
                report::duration(bulk)
            ),
            met: Some(ratio <= 1.5),
        });
    }
}

/// Redis's script floor row, and for the larger batch how `save_all`'s distance from the raw
/// bulk floor splits: the scripting itself (script floor ÷ bulk floor) and the store's own
/// checks (save_all ÷ script floor). Reported, not judged: they say why the target is what it is.
fn push_script_floor(
    run: &mut Run<'_>,
    floor: &Samples,
    slot: usize,
    n: usize,
    (p50, bulk, script): (Duration, Duration, Duration),
) {
    let name = run.name;
    let mut row = Row::new(
        name,
        format!(
            "script floor: the same {} read and written back by a script, nothing compared",
            thousands(n)
        ),
        format!("{} calls", run.plan.batch_reps[slot]),
    );
    row.p50 = Some(script);
    row.ops_per_sec = Some(n as f64 / script.as_secs_f64());
    row.vs_floor = Some(script.as_secs_f64() / floor.p50().as_secs_f64());
    run.rows.push(row);
    if slot == 1 {
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
        run.targets.push(Target {
            backend: name,
            target: format!(
                "save_all of {}: the scripting's share (script floor ÷ raw bulk floor) and the checks' (save_all ÷ script floor)",
                thousands(n)
            ),
            measured: format!(
                "{:.2}× scripting, {:.2}× checks ({} script floor)",
                ratio(script, bulk),
                ratio(p50, script),
                report::duration(script)
            ),
            met: None,
        });
    }
}

/// The same `n` entries as single saves one after the other (at most the plan's
/// `single_saves`, the time scaled to `n`): its row, and the time all `n` would take.
async fn single_saves_row(
    run: &mut Run<'_>,
    g: &Arc<str>,
    n: usize,
) -> Result<Duration, BenchError> {
    let singles = run.plan.single_saves.unwrap_or(n).min(n);
    let base = reserve_positions(singles as u64);
    let store = &run.subject.store;
    let (took, ()) = time_once("single saves", async {
        for i in 0..singles {
            store
                .save(g, "batch", u32::try_from(i)?, base + i as u64)
                .await?;
        }
        Ok(())
    })
    .await?;
    let per_save = took / u32::try_from(singles)?;
    let as_singles = per_save * u32::try_from(n)?;
    let mut row = Row::new(
        run.name,
        format!("the same {} as single saves", thousands(n)),
        if singles == n {
            "1 run".to_owned()
        } else {
            format!("{singles} saves, scaled")
        },
    );
    row.p50 = Some(as_singles);
    row.ops_per_sec = Some(singles as f64 / took.as_secs_f64());
    row.round_trips = run.rt(run.trips.save.map(|s| Trips {
        waited: s.waited * n as u64,
        settled: s.settled * n as u64,
    }));
    run.rows.push(row);
    Ok(as_singles)
}

/// How much faster `save_all` of `n` is than the same entries as single saves, and on the
/// backends that batch into one request, the round-trip target.
fn push_speedup_targets(
    run: &mut Run<'_>,
    slot: usize,
    n: usize,
    p50: Duration,
    as_singles: Duration,
) {
    let name = run.name;
    let speedup = as_singles.as_secs_f64() / p50.as_secs_f64();
    if !matches!(name, "postgres" | "redis" | "sqlite" | "mysql") {
        run.targets.push(Target {
            backend: name,
            target: format!("save_all of {} vs single saves (reported)", thousands(n)),
            measured: format!("{speedup:.1}×"),
            met: None,
        });
        return;
    }
    if run.backend.counted.is_some() {
        run.targets.push(Target {
            backend: name,
            target: format!("save_all of {}: 1 round trip", thousands(n)),
            measured: run.rt(run.trips.save_all[slot]),
            met: Some(waited(run.trips.save_all[slot]) == Some(1)),
        });
    }
    run.targets.push(Target {
        backend: name,
        target: format!(
            "save_all of {} vs single saves (reported; was a target of 100×)",
            thousands(n)
        ),
        measured: format!(
            "{speedup:.0}× ({} vs {})",
            report::duration(p50),
            report::duration(as_singles)
        ),
        met: None,
    });
}

/// `list` of the group's `n` checkpoints beside the raw query reading the same rows: both
/// rows, and the target `list` is held to.
async fn list_rows(
    run: &mut Run<'_>,
    floor: &Samples,
    g: &Arc<str>,
    n: usize,
) -> Result<(), BenchError> {
    let name = run.name;
    let (list_p50, raw_p50) = time_lists(run, g, n).await?;
    let reps = run.plan.list_reps;
    let raw_label = match name {
        "redis" => format!("raw `HGETALL` of {}", thousands(n)),
        "dynamodb" => format!("raw `Query` of {}", thousands(n)),
        _ => format!("raw list query of {}", thousands(n)),
    };
    let mut row = Row::new(name, raw_label, format!("{reps} calls"));
    row.p50 = Some(raw_p50);
    row.round_trips = run.rt(run.trips.raw_list);
    row.vs_floor = Some(raw_p50.as_secs_f64() / floor.p50().as_secs_f64());
    run.rows.push(row);
    let list_vs_raw = list_p50.as_secs_f64() / raw_p50.as_secs_f64();
    let mut row = Row::new(
        name,
        format!("**list** of {}", thousands(n)),
        format!("{reps} calls"),
    );
    row.p50 = Some(list_p50);
    row.round_trips = run.rt(run.trips.list);
    row.vs_floor = Some(list_p50.as_secs_f64() / floor.p50().as_secs_f64());
    row.vs_raw = Some(list_vs_raw);
    run.rows.push(row);
    run.targets.push(Target {
        backend: name,
        target: format!("list of {} ≤ 1.5× the raw query", thousands(n)),
        measured: format!(
            "{list_vs_raw:.2}× ({} vs {})",
            report::duration(list_p50),
            report::duration(raw_p50)
        ),
        met: Some(list_vs_raw <= 1.5),
    });
    Ok(())
}

/// The plan's `list_reps` calls of `list` and of the raw query, interleaved so that the
/// machine's load weighs on both alike, each checked to read all `n` rows: the median of each.
async fn time_lists(
    run: &Run<'_>,
    g: &Arc<str>,
    n: usize,
) -> Result<(Duration, Duration), BenchError> {
    let subject = run.subject;
    // Untimed first call of each: connections, prepared statements, the server's caches.
    let listed = subject.store.list(g).await.map_err(context("list"))?;
    if listed.len() != n {
        return Err(format!("list returned {} checkpoints, not {n}", listed.len()).into());
    }
    (subject.raw_list)(Arc::clone(g))
        .await
        .map_err(context("raw list"))?;
    let mut list_samples = Vec::new();
    let mut raw_samples = Vec::new();
    for _ in 0..run.plan.list_reps {
        let (took, _) = time_once("list", async { Ok(subject.store.list(g).await?) }).await?;
        list_samples.push(took);
        let (took, rows_read) = time_once("raw list", (subject.raw_list)(Arc::clone(g))).await?;
        if rows_read != n {
            return Err(format!("the raw list returned {rows_read} rows, not {n}").into());
        }
        raw_samples.push(took);
    }
    list_samples.sort_unstable();
    raw_samples.sort_unstable();
    let list_p50 = list_samples[(list_samples.len() - 1) / 2];
    let raw_p50 = raw_samples[(raw_samples.len() - 1) / 2];
    Ok((list_p50, raw_p50))
}

/// The medians of one batch size: `save_all`, and the floors the backend has.
struct Timed {
    save: Duration,
    bulk: Option<Duration>,
    script: Option<Duration>,
}

/// `reps` calls of `save_all` of `n` moving the group's checkpoints forward, each followed by
/// the raw bulk floor (and Redis's script floor) writing the same rows (further forward),
/// interleaved so that the machine's load weighs on all alike: the median of each.
async fn time_batches(
    run: &Run<'_>,
    group: &Arc<str>,
    n: usize,
    reps: usize,
) -> Result<Timed, BenchError> {
    let subject = run.subject;
    let mut saves = Vec::new();
    let mut bulks = Vec::new();
    let mut scripts = Vec::new();
    for _ in 0..reps {
        let entries = batch(n, reserve_positions(n as u64));
        let (took, ()) = time_once("save_all", async {
            subject.store.save_all(group, &entries).await?;
            Ok(())
        })
        .await?;
        saves.push(took);
        if let Some(bulk) = &subject.raw_save_all {
            let rows = Arc::new(batch(n, reserve_positions(n as u64)));
            let (took, ()) = time_once("raw bulk write", bulk(Arc::clone(group), rows)).await?;
            bulks.push(took);
        }
        if let Some(script) = &subject.script_save_all {
            let rows = Arc::new(batch(n, reserve_positions(n as u64)));
            let (took, ()) = time_once("script floor", script(Arc::clone(group), rows)).await?;
            scripts.push(took);
        }
    }
    let median = |mut samples: Vec<Duration>| {
        samples.sort_unstable();
        samples.get(samples.len().saturating_sub(1) / 2).copied()
    };
    let save = median(saves).ok_or("no save_all was timed")?;
    Ok(Timed {
        save,
        bulk: median(bulks),
        script: median(scripts),
    })
}
