//! Round trips per operation, counted through the kit's proxy, one call after a warm-up each,
//! and checked against what the store documents.

use std::sync::Arc;

use checkpoint_conformance::round_trips::CountingProxy;

use crate::measure::{Trips, count, round_trips};
use crate::stores::{RoundTrips, Run, batch};
use crate::subject::{
    Backend, BenchError, SaveArgs, Subject, context, next_position, reserve_positions,
};

/// The connections whose exchanges are counted, and how to count them.
struct Counter<'a> {
    /// The subject connected through the proxy.
    counted: &'a Subject,
    proxy: &'a CountingProxy,
    /// The backend's `release_exchanges`: what a connection returning to its pool adds.
    release: u64,
}

/// Counts every operation's round trips into `run.trips`; a count that differs from the
/// documented one goes to `run.mismatches`.
pub(super) async fn measure(run: &mut Run<'_>) -> Result<(), BenchError> {
    let backend = run.backend;
    let Some((counted, proxy)) = &backend.counted else {
        return Ok(());
    };
    eprintln!("checkpoint-bench: {}: counting round trips", run.name);
    let counter = Counter {
        counted,
        proxy,
        release: backend.release_exchanges,
    };
    let g = super::group(&run.id, "rt");
    count_single_ops(&counter, &g, &mut run.trips).await?;
    count_batches(&counter, backend, &run.id, &mut run.trips).await?;
    check_documented(run);
    Ok(())
}

/// The floors, the raw and hand-written saves, and the store's save and load, on group `g`.
async fn count_single_ops(
    c: &Counter<'_>,
    g: &Arc<str>,
    trips: &mut RoundTrips,
) -> Result<(), BenchError> {
    let (counted, proxy, release) = (c.counted, c.proxy, c.release);
    let store = &counted.store;
    trips.floor = Some(round_trips("floor", proxy, release, || (counted.floor)()).await?);
    if let Some(commit) = &counted.commit_floor {
        trips.commit_floor = Some(round_trips("commit floor", proxy, release, || commit()).await?);
    }
    let args = |subscription: &'static str| SaveArgs {
        group: Arc::clone(g),
        subscription: subscription.into(),
        partition: 0,
        position: next_position(),
    };
    trips.raw_save = Some(
        round_trips("raw save", proxy, release, || {
            (counted.raw_save)(args("raw"))
        })
        .await?,
    );
    trips.hand_save = Some(
        round_trips("hand-written save", proxy, release, || {
            (counted.hand_save)(args("hand"))
        })
        .await?,
    );
    trips.save = Some(
        round_trips("save", proxy, release, || async {
            store.save(g, "store", 0, next_position()).await?;
            Ok(())
        })
        .await?,
    );
    trips.load = Some(
        round_trips("load", proxy, release, || async {
            store.load(g, "store", 0).await?;
            Ok(())
        })
        .await?,
    );
    Ok(())
}

/// `save_all` of each batch size, each on a group of its own, and for the larger one `list`
/// and the raw list query of what it saved.
async fn count_batches(
    c: &Counter<'_>,
    backend: &Backend,
    id: &str,
    trips: &mut RoundTrips,
) -> Result<(), BenchError> {
    let (counted, proxy, release) = (c.counted, c.proxy, c.release);
    let store = &counted.store;
    for (slot, &n) in backend.batch_sizes.iter().enumerate() {
        let batch_group = super::group(id, &format!("rt-batch-{n}"));
        // Warm up with one entry (same statement or script), then count the whole batch.
        store
            .save_all(&batch_group, &batch(1, next_position()))
            .await
            .map_err(context("warm-up of save_all"))?;
        let entries = batch(n, reserve_positions(n as u64));
        trips.save_all[slot] = Some(
            count(&format!("save_all of {n}"), proxy, release, async {
                store.save_all(&batch_group, &entries).await?;
                Ok(())
            })
            .await?,
        );
        if slot == 1 {
            trips.list = Some(
                round_trips("list", proxy, release, || async {
                    store.list(&batch_group).await?;
                    Ok(())
                })
                .await?,
            );
            trips.raw_list = Some(
                round_trips("raw list", proxy, release, || async {
                    (counted.raw_list)(Arc::clone(&batch_group)).await?;
                    Ok(())
                })
                .await?,
            );
        }
    }
    Ok(())
}

/// Every count against the documented one; each difference goes to `run.mismatches`.
fn check_documented(run: &mut Run<'_>) {
    let (name, backend, trips) = (run.name, run.backend, &run.trips);
    let mismatches = &mut run.mismatches;
    let documented = backend.documented;
    // The exchanges the caller waits for are what the stores document; sqlx's check of a
    // connection returning to its pool comes after the call and is shown beside them.
    let mut check = |what: String, counted: Option<Trips>, expected: u64| {
        let waited = counted.map(|trips| trips.waited);
        if waited != Some(expected) {
            mismatches.push(format!(
                "{name} {what}: counted {waited:?}, documented {expected}"
            ));
        }
    };
    check("floor".into(), trips.floor, 1);
    check("raw save".into(), trips.raw_save, 1);
    check("save".into(), trips.save, documented.save);
    check("load".into(), trips.load, documented.load);
    if let Some(list) = documented.list {
        check(
            format!("list of {}", backend.batch_sizes[1]),
            trips.list,
            list(backend.batch_sizes[1]),
        );
    }
    for (slot, &n) in backend.batch_sizes.iter().enumerate() {
        let expected = (documented.save_all)(n);
        let waited = trips.save_all[slot].map(|trips| trips.waited);
        if !waited.is_some_and(|waited| expected.contains(&waited)) {
            let expected = if expected.start() == expected.end() {
                expected.start().to_string()
            } else {
                format!("{} to {}", expected.start(), expected.end())
            };
            mismatches.push(format!(
                "{name} save_all of {n}: counted {waited:?}, documented {expected}"
            ));
        }
    }
}
