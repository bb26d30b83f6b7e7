//! The stores' own workloads, one file each, run for one backend in the order of the table:
//! round trips counted on the wire, latency at concurrency 1, throughput at 1, 16 and 64
//! workers, and `save_all` of 1,000 and 10,000 beside single saves and `list`.

mod batches;
mod groups;
mod latency;
mod leases;
mod round_trips;
mod throughput;

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use checkpoint_core::Checkpoint;

use crate::measure::{Op, Trips};
use crate::report::{Row, Target};
use crate::subject::{Backend, BenchError, SaveArgs, SaveFn, Subject, next_position};
use crate::{Outcome, Plan};

/// One backend's run: what every workload reads, and what they add to the table.
pub(crate) struct Run<'a> {
    pub backend: &'a Backend,
    pub name: &'static str,
    /// The direct connections every timing uses.
    pub subject: &'a Subject,
    pub plan: Plan,
    /// Unique per process and start time: every group of the run starts with it.
    pub id: String,
    pub rows: Vec<Row>,
    pub targets: Vec<Target>,
    /// Round-trip counts that differ from the documented ones.
    pub mismatches: Vec<String>,
    pub trips: RoundTrips,
}

impl Run<'_> {
    /// A round-trip count as the table shows it.
    pub fn rt(&self, count: Option<Trips>) -> String {
        match count {
            _ if self.backend.counted.is_none() => "n/a".to_owned(),
            None => String::new(),
            Some(trips) if trips.settled > trips.waited => format!(
                "{} (+{} pool check)",
                thousands(trips.waited as usize),
                trips.settled - trips.waited
            ),
            Some(trips) => thousands(trips.waited as usize),
        }
    }

    /// A group of this run.
    pub fn group(&self, suffix: &str) -> Arc<str> {
        group(&self.id, suffix)
    }
}

/// The exchanges the caller waited for, when they were counted.
pub(crate) fn waited(count: Option<Trips>) -> Option<u64> {
    count.map(|trips| trips.waited)
}

/// Runs every store workload on one backend.
pub(crate) async fn run_backend(
    backend: &Backend,
    plan: Plan,
    max_concurrency: u32,
) -> Result<Outcome, BenchError> {
    let plan = if backend.slow && !plan.smoke {
        // 200 latency samples per operation instead of 2,000, fewer batch calls, and the single
        // saves timed over 200 and scaled: an emulator that serves a few hundred requests a
        // second (tens on a busy machine).
        Plan {
            latency_per_round: plan.latency_per_round / 10,
            batch_reps: [3, 1],
            single_saves: Some(200),
            list_reps: 3,
            ..plan
        }
    } else {
        plan
    };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let mut run = Run {
        backend,
        name: backend.name,
        subject: &backend.direct,
        plan,
        id: format!("{}-{nanos}", std::process::id()),
        rows: Vec::new(),
        targets: Vec::new(),
        mismatches: Vec::new(),
        trips: RoundTrips::default(),
    };
    round_trips::measure(&mut run).await?;
    let floor = latency::measure(&mut run).await?;
    throughput::measure(&mut run, max_concurrency).await?;
    batches::measure(&mut run, &floor).await?;
    leases::measure(&mut run).await?;
    groups::measure(&mut run).await?;
    Ok(Outcome {
        rows: run.rows,
        targets: run.targets,
        mismatches: run.mismatches,
        workers: Vec::new(),
    })
}

pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A group name of this run, unique per process and start time.
pub(crate) fn group(run: &str, suffix: &str) -> Arc<str> {
    format!("bench-{run}-{suffix}").into()
}

/// A save through `save` on the worker's own key.
pub(crate) fn save_op(save: SaveFn, groups: Arc<Vec<Arc<str>>>, subscription: &'static str) -> Op {
    let subscription: Arc<str> = subscription.into();
    Arc::new(move |worker| {
        save(SaveArgs {
            group: Arc::clone(&groups[worker as usize % groups.len()]),
            subscription: Arc::clone(&subscription),
            partition: worker,
            position: next_position(),
        })
    })
}

/// A save through the store, on the worker's own key.
pub(crate) fn store_save_op(subject: &Subject, groups: Arc<Vec<Arc<str>>>) -> Op {
    let store = Arc::clone(&subject.store);
    let save: SaveFn = Arc::new(move |args: SaveArgs| {
        let store = Arc::clone(&store);
        Box::pin(async move {
            store
                .save(
                    &args.group,
                    &args.subscription,
                    args.partition,
                    args.position,
                )
                .await?;
            Ok(())
        })
    });
    save_op(save, groups, "store")
}

pub(crate) fn floor_op(subject: &Subject) -> Op {
    let floor = Arc::clone(&subject.floor);
    Arc::new(move |_| floor())
}

pub(crate) fn batch(n: usize, position: u64) -> Vec<Checkpoint> {
    (0..n)
        .map(|i| {
            Checkpoint::new(
                "batch",
                u32::try_from(i).unwrap_or(u32::MAX),
                position + i as u64,
            )
        })
        .collect()
}

/// Round trips counted for one backend.
#[derive(Debug, Default, Clone)]
pub(crate) struct RoundTrips {
    pub floor: Option<Trips>,
    pub commit_floor: Option<Trips>,
    pub raw_save: Option<Trips>,
    pub hand_save: Option<Trips>,
    pub save: Option<Trips>,
    pub load: Option<Trips>,
    pub save_all: [Option<Trips>; 2],
    pub list: Option<Trips>,
    pub raw_list: Option<Trips>,
}
