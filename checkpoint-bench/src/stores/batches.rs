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
    let (name, subject, plan, backend) = (run.name, run.subject, run.plan, run.backend);
    for (slot, &n) in backend.batch_sizes.iter().enumerate() {
        eprintln!("checkpoint-bench: {name}: save_all of {n}");
        let g = run.group(&format!("batch-{n}"));
        // Untimed: creates the rows, so the timed calls move existing checkpoints forward,
        // the steady state.
        subject
            .store
            .save_all(&g, &batch(n, reserve_positions(n as u64)))
            .await
            .map_err(context("save_all"))?;
        let (p50, bulk) = time_batches(run, &g, n, plan.batch_reps[slot]).await?;
        let mut row = Row::new(
            name,
            format!("**save_all** of {}", thousands(n)),
            format!("{} calls", plan.batch_reps[slot]),
        );
        row.p50 = Some(p50);
        row.ops_per_sec = Some(n as f64 / p50.as_secs_f64());
        row.round_trips = run.rt(run.trips.save_all[slot]);
        row.vs_floor = Some(p50.as_secs_f64() / floor.p50().as_secs_f64());
        row.vs_raw = bulk.map(|bulk| p50.as_secs_f64() / bulk.as_secs_f64());
        run.rows.push(row);
        if let Some(bulk) = bulk {
            let mut row = Row::new(
                name,
                format!(
                    "raw bulk write of the same {} (no forward-only condition)",
                    thousands(n)
                ),
                format!("{} calls", plan.batch_reps[slot]),
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

        if slot == 1 {
            // The same entries as single saves, one after the other.
            let singles = plan.single_saves.unwrap_or(n).min(n);
            let base = reserve_positions(singles as u64);
            let (took, ()) = time_once("single saves", async {
                for i in 0..singles {
                    subject
                        .store
                        .save(&g, "batch", u32::try_from(i)?, base + i as u64)
                        .await?;
                }
                Ok(())
            })
            .await?;
            let per_save = took / u32::try_from(singles)?;
            let as_singles = per_save * u32::try_from(n)?;
            let mut row = Row::new(
                name,
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
            let speedup = as_singles.as_secs_f64() / p50.as_secs_f64();
            if matches!(name, "postgres" | "redis" | "sqlite") {
                if backend.counted.is_some() {
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
            } else {
                run.targets.push(Target {
                    backend: name,
                    target: format!("save_all of {} vs single saves (reported)", thousands(n)),
                    measured: format!("{speedup:.1}×"),
                    met: None,
                });
            }

            eprintln!("checkpoint-bench: {name}: list of {n}");
            let mut list_samples = Vec::new();
            let mut raw_samples = Vec::new();
            // Untimed first call of each, then interleaved timed calls.
            let listed = subject.store.list(&g).await.map_err(context("list"))?;
            if listed.len() != n {
                return Err(format!("list returned {} checkpoints, not {n}", listed.len()).into());
            }
            (subject.raw_list)(Arc::clone(&g))
                .await
                .map_err(context("raw list"))?;
            for _ in 0..plan.list_reps {
                let (took, _) =
                    time_once("list", async { Ok(subject.store.list(&g).await?) }).await?;
                list_samples.push(took);
                let (took, rows_read) =
                    time_once("raw list", (subject.raw_list)(Arc::clone(&g))).await?;
                if rows_read != n {
                    return Err(format!("the raw list returned {rows_read} rows, not {n}").into());
                }
                raw_samples.push(took);
            }
            list_samples.sort_unstable();
            raw_samples.sort_unstable();
            let list_p50 = list_samples[(list_samples.len() - 1) / 2];
            let raw_p50 = raw_samples[(raw_samples.len() - 1) / 2];
            let raw_label = match name {
                "redis" => format!("raw `HGETALL` of {}", thousands(n)),
                "dynamodb" => format!("raw `Query` of {}", thousands(n)),
                _ => format!("raw list query of {}", thousands(n)),
            };
            let mut row = Row::new(name, raw_label, format!("{} calls", plan.list_reps));
            row.p50 = Some(raw_p50);
            row.round_trips = run.rt(run.trips.raw_list);
            row.vs_floor = Some(raw_p50.as_secs_f64() / floor.p50().as_secs_f64());
            run.rows.push(row);
            let mut row = Row::new(
                name,
                format!("**list** of {}", thousands(n)),
                format!("{} calls", plan.list_reps),
            );
            row.p50 = Some(list_p50);
            row.round_trips = run.rt(run.trips.list);
            row.vs_floor = Some(list_p50.as_secs_f64() / floor.p50().as_secs_f64());
            row.vs_raw = Some(list_p50.as_secs_f64() / raw_p50.as_secs_f64());
            run.rows.push(row);
            let list_vs_raw = list_p50.as_secs_f64() / raw_p50.as_secs_f64();
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
        }
    }
    Ok(())
}

/// `reps` calls of `save_all` of `n` moving the group's checkpoints forward, each followed by
/// the raw bulk floor writing the same rows (further forward), interleaved so that the
/// machine's load weighs on both alike: the median of each.
async fn time_batches(
    run: &Run<'_>,
    group: &Arc<str>,
    n: usize,
    reps: usize,
) -> Result<(Duration, Option<Duration>), BenchError> {
    let subject = run.subject;
    let mut saves = Vec::new();
    let mut bulks = Vec::new();
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
    }
    let median = |mut samples: Vec<Duration>| {
        samples.sort_unstable();
        samples.get(samples.len().saturating_sub(1) / 2).copied()
    };
    let save = median(saves).ok_or("no save_all was timed")?;
    Ok((save, median(bulks)))
}
