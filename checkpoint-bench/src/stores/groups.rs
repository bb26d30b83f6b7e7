//! `groups` against the number of checkpoints: the same 10 groups over 10 checkpoints and over
//! many more, on a table or key prefix of their own (so the run's other groups are not
//! counted). Its cost must follow the number of groups, not of checkpoints.

use std::time::Duration;

use checkpoint_core::Checkpoint;

use crate::measure::time_once;
use crate::report::{self, Row, Target};
use crate::stores::{Run, thousands};
use crate::subject::{BenchError, BenchStore, context};

/// The groups of the workload.
const GROUPS: u32 = 10;

/// Calls of `groups` timed at each size.
const REPS: usize = 7;

/// Measures the `groups` rows and target.
pub(super) async fn measure(run: &mut Run<'_>) -> Result<(), BenchError> {
    let name = run.name;
    let store = &run.backend.groups_store;
    let many = match (run.plan.smoke, run.backend.slow) {
        (true, true) => 1_000,
        (true, false) => 10_000,
        (false, true) => 10_000,
        (false, false) => 100_000,
    };
    eprintln!("checkpoint-bench: {name}: groups over 10 and {many} checkpoints");
    let groups: Vec<String> = (0..GROUPS)
        .map(|g| format!("{}-group-{g}", run.id))
        .collect();
    for group in &groups {
        store
            .save(group, "s", 0, 1)
            .await
            .map_err(context("groups: the first checkpoints"))?;
    }
    let few = time_groups(&**store, &groups).await?;
    let per_group = u32::try_from(many / GROUPS as usize)?;
    for group in &groups {
        for chunk in (1..per_group).collect::<Vec<u32>>().chunks(10_000) {
            let batch: Vec<Checkpoint> =
                chunk.iter().map(|&p| Checkpoint::new("s", p, 1)).collect();
            store
                .save_all(group, &batch)
                .await
                .map_err(context("groups: filling the groups"))?;
        }
    }
    let lots = time_groups(&**store, &groups).await?;
    for (n, p50) in [(GROUPS as usize, few), (many, lots)] {
        let mut row = Row::new(
            name,
            format!("**groups**: 10 groups over {} checkpoints", thousands(n)),
            format!("{REPS} calls"),
        );
        row.p50 = Some(p50);
        run.rows.push(row);
    }
    let ratio = lots.as_secs_f64() / few.as_secs_f64();
    run.targets.push(Target {
        backend: name,
        target: format!(
            "groups over {} checkpoints ≤ 2× over 10 (10 groups)",
            thousands(many)
        ),
        measured: format!(
            "{ratio:.2}× ({} vs {})",
            report::duration(lots),
            report::duration(few)
        ),
        met: Some(ratio <= 2.0),
    });
    Ok(())
}

/// The median time of [`REPS`] calls of `groups`, each checked to return exactly `groups`.
async fn time_groups(store: &dyn BenchStore, groups: &[String]) -> Result<Duration, BenchError> {
    let mut samples = Vec::new();
    for _ in 0..REPS {
        let (took, listed) = time_once("groups", async { Ok(store.groups().await?) }).await?;
        if listed != groups {
            return Err(format!(
                "groups returned {} groups, not the workload's {}",
                listed.len(),
                groups.len()
            )
            .into());
        }
        samples.push(took);
    }
    samples.sort_unstable();
    Ok(samples[samples.len() / 2])
}
