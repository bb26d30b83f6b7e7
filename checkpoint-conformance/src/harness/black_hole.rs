//! A server behind a black hole: the peer vanished without closing anything, as behind a cut
//! network path or in front of a frozen or replaced host; and the run every backend's fault
//! tests make with it.

use std::time::{Duration, Instant};

use checkpoint_core::{Checkpoint, CheckpointStore, Error, Operation};

use crate::recovery::{Recovery, save_until_recovered};
use crate::{Failure, error_chain, fresh_group};

/// The kit's [`Proxy`](crate::proxy::Proxy), used to put a store's server behind a black hole
/// and back (see there for what a black hole does to open and new connections).
///
/// ```no_run
/// # async fn example() -> std::io::Result<()> {
/// use checkpoint_conformance::harness::BlackHoleProxy;
///
/// let proxy = BlackHoleProxy::start("127.0.0.1:6379").await?;
/// // connect the client under test to proxy.local_addr(), then:
/// proxy.black_hole();
/// // ... calls time out ...
/// proxy.forward();
/// // ... calls work again once the client made new connections ...
/// # Ok(()) }
/// ```
pub type BlackHoleProxy = crate::proxy::Proxy;

/// The bounds [`black_hole_and_back`] holds a store to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlackHoleBounds {
    /// The store's timeout (its `with_timeout`): every call in the black hole must end in
    /// [`Error::Timeout`] naming the call's operation and this duration.
    pub timeout: Duration,
    /// How much later than `timeout` a call in the black hole may return.
    pub margin: Duration,
    /// Within how long after the proxies forward again a `save`, retried every 10 ms, must
    /// succeed.
    pub recovery: Duration,
}

/// What [`black_hole_and_back`] measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlackHoleReport {
    /// Every call made in the black hole, in order, and how long it took to time out.
    pub timed_out: Vec<(Operation, Duration)>,
    /// From the proxies forwarding again to the first `save` that succeeded, retried every
    /// 10 ms, and how many attempts failed before it.
    pub recovery: Recovery,
    /// Each operation once more after that, and how long it took.
    pub after: Vec<(Operation, Duration)>,
}

/// How many times the four calls run in the black hole: the second round runs after the store
/// has had every chance to give up the connections of the first.
const BLACK_HOLE_ROUNDS: u64 = 2;

/// How long the run lets a store finish what it does in the background after a call (a pool
/// checking a returned connection with a ping) before the black hole, so that the black hole
/// meets the store between calls, not in the middle of that.
const SETTLE: Duration = Duration::from_millis(200);

/// Runs a store through a black hole and back, and checks what the contract promises:
///
/// 1. In a fresh group, `save`, `save_all` and `list` succeed (the store is connected through
///    `proxies`, and has connections to lose); then 200 ms pass, for whatever the store does
///    in the background after a call.
/// 2. Every proxy turns into a black hole. Twice over, `save`, `load`, `save_all` and `list`
///    each return [`Error::Timeout`] for their own operation after `bounds.timeout`, within
///    `bounds.margin` more.
/// 3. Every proxy forwards again. A `save` retried every 10 ms succeeds within
///    `bounds.recovery`, with only retryable errors before it: the store has given up the
///    connections that stopped answering (they never will, see [`BlackHoleProxy`]) and made
///    new ones.
/// 4. `load`, `save_all`, `list` and `save` then succeed, each within `bounds.timeout`, and
///    read back exactly what was saved: the saves that timed out, whether applied or not,
///    moved nothing past the later ones.
///
/// `store` must have `bounds.timeout` as its timeout and reach its server only through
/// `proxies` (a cluster: one proxy per node).
///
/// # Errors
///
/// A [`Failure`] that says which step broke, with the error chain.
pub async fn black_hole_and_back(
    store: &dyn CheckpointStore,
    proxies: &[&BlackHoleProxy],
    bounds: BlackHoleBounds,
) -> Result<BlackHoleReport, Failure> {
    let group = fresh_group("black-hole");
    warm_up_through_proxies(store, &group).await?;
    for proxy in proxies {
        proxy.black_hole();
    }
    let timed_out = time_out_in_black_hole(store, &group, bounds).await?;
    for proxy in proxies {
        proxy.forward();
    }
    let recovery = recover_after_black_hole(store, &group, bounds).await?;
    let after = work_after_recovery(store, &group, bounds).await?;
    Ok(BlackHoleReport {
        timed_out,
        recovery,
        after,
    })
}

/// Step 1 of [`black_hole_and_back`]: `save`, `save_all` and `list` through the proxies, so that
/// the store has connections to lose, then [`SETTLE`] for what it does in the background.
async fn warm_up_through_proxies(store: &dyn CheckpointStore, group: &str) -> Result<(), Failure> {
    let warm_up = |error: Error| {
        Failure::new(format!(
            "before the black hole, through the proxies: {}",
            error_chain(&error)
        ))
    };
    store.save(group, "s", 0, 1).await.map_err(warm_up)?;
    store
        .save_all(group, &[Checkpoint::new("s", 1, 1)])
        .await
        .map_err(warm_up)?;
    store.list(group).await.map_err(warm_up)?;
    tokio::time::sleep(SETTLE).await;
    Ok(())
}

/// Step 2 of [`black_hole_and_back`], with every proxy a black hole: [`BLACK_HOLE_ROUNDS`] times
/// over, each of the four operations must time out within the bounds. Returns every call made,
/// in order, with how long it took.
async fn time_out_in_black_hole(
    store: &dyn CheckpointStore,
    group: &str,
    bounds: BlackHoleBounds,
) -> Result<Vec<(Operation, Duration)>, Failure> {
    let mut timed_out = Vec::new();
    for round in 0..BLACK_HOLE_ROUNDS {
        // Positions below the ones saved after the black hole, whether applied or not.
        let batch = [
            Checkpoint::new("s", 0, 3 + round),
            Checkpoint::new("s", 1, 2),
        ];
        for operation in [
            Operation::Save,
            Operation::Load,
            Operation::SaveAll,
            Operation::List,
        ] {
            let started = Instant::now();
            let result = match operation {
                Operation::Save => store.save(group, "s", 0, 2 + round).await,
                Operation::Load => store.load(group, "s", 0).await.map(drop),
                Operation::SaveAll => store.save_all(group, &batch).await,
                _ => store.list(group).await.map(drop),
            };
            let took = started.elapsed();
            expect_timeout_within_bounds(operation, round, result, took, bounds)?;
            timed_out.push((operation, took));
        }
    }
    Ok(timed_out)
}

/// Checks one call made in the black hole: it must end in [`Error::Timeout`] for its own
/// operation and the store's timeout (success means the store reaches its server around the
/// proxies), no sooner than the timeout and no later than the margin after it.
fn expect_timeout_within_bounds(
    operation: Operation,
    round: u64,
    result: Result<(), Error>,
    took: Duration,
    bounds: BlackHoleBounds,
) -> Result<(), Failure> {
    match result {
        Err(Error::Timeout {
            operation: timed,
            after,
            ..
        }) if timed == operation && after == bounds.timeout => {}
        Err(error) => {
            return Err(Failure::new(format!(
                "{operation:?} in a black hole (round {round}) after {took:?}: expected \
                 Error::Timeout for {operation:?} after {:?}, got {error:?}: {}",
                bounds.timeout,
                error_chain(&error)
            )));
        }
        Ok(()) => {
            return Err(Failure::new(format!(
                "{operation:?} in a black hole (round {round}) succeeded: the store \
                 reaches its server around the proxies"
            )));
        }
    }
    if took < bounds.timeout || took > bounds.timeout + bounds.margin {
        return Err(Failure::new(format!(
            "{operation:?} in a black hole (round {round}) timed out after {took:?}, \
             not within {:?} of its {:?} timeout",
            bounds.margin, bounds.timeout
        )));
    }
    Ok(())
}

/// Step 3 of [`black_hole_and_back`], with the proxies forwarding again: a `save` of position
/// 10, retried every 10 ms, must succeed within `bounds.recovery`.
async fn recover_after_black_hole(
    store: &dyn CheckpointStore,
    group: &str,
    bounds: BlackHoleBounds,
) -> Result<Recovery, Failure> {
    let recovery = save_until_recovered(store, group, "s", 0, 10, bounds.recovery)
        .await
        .map_err(|failure| {
            Failure::new(format!(
                "after the black hole, with the proxies forwarding again: {failure}"
            ))
        })?;
    if recovery.took > bounds.recovery {
        return Err(Failure::new(format!(
            "after the black hole, the first save succeeded {:?} after the proxies forwarded \
             again ({} attempts failed), more than the {:?} allowed",
            recovery.took, recovery.failures, bounds.recovery
        )));
    }
    Ok(recovery)
}

/// Step 4 of [`black_hole_and_back`], once recovered: `load`, `save_all`, `list` and `save` each
/// succeed within `bounds.timeout`, and read back exactly what was saved, so the saves that
/// timed out moved nothing past the later ones. Returns each call with how long it took.
async fn work_after_recovery(
    store: &dyn CheckpointStore,
    group: &str,
    bounds: BlackHoleBounds,
) -> Result<Vec<(Operation, Duration)>, Failure> {
    let mut after = Vec::new();
    let mut timed = |operation: Operation, started: Instant| -> Result<(), Failure> {
        let took = started.elapsed();
        after.push((operation, took));
        if took > bounds.timeout {
            return Err(Failure::new(format!(
                "after recovering from the black hole, {operation:?} took {took:?}"
            )));
        }
        Ok(())
    };
    let recovered = |error: Error| {
        Failure::new(format!(
            "after recovering from the black hole: {}",
            error_chain(&error)
        ))
    };
    let started = Instant::now();
    let loaded = store.load(group, "s", 0).await.map_err(recovered)?;
    timed(Operation::Load, started)?;
    let started = Instant::now();
    let batch = [Checkpoint::new("s", 0, 11), Checkpoint::new("s", 1, 5)];
    store.save_all(group, &batch).await.map_err(recovered)?;
    timed(Operation::SaveAll, started)?;
    let started = Instant::now();
    let listed = store.list(group).await.map_err(recovered)?;
    timed(Operation::List, started)?;
    let started = Instant::now();
    store.save(group, "s", 1, 6).await.map_err(recovered)?;
    timed(Operation::Save, started)?;
    ensure_read_back_after_recovery(loaded, listed)?;
    Ok(after)
}

/// The end of step 4: the load made after recovering saw the position 10 the recovering save
/// stored, and the list saw exactly the batch saved after it.
fn ensure_read_back_after_recovery(
    loaded: Option<u64>,
    mut listed: Vec<Checkpoint>,
) -> Result<(), Failure> {
    if loaded != Some(10) {
        return Err(Failure::new(format!(
            "after the black hole, a load of the checkpoint saved at 10 (every save in the \
             black hole was below it) returned {loaded:?}"
        )));
    }
    listed.sort_by_key(|checkpoint| checkpoint.partition);
    let expected = vec![Checkpoint::new("s", 0, 11), Checkpoint::new("s", 1, 5)];
    if listed != expected {
        return Err(Failure::new(format!(
            "after the black hole, list returned {listed:?}, expected {expected:?}"
        )));
    }
    Ok(())
}
