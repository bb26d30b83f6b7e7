//! `wait`: pending while nothing is committed, woken soon after a commit.

use std::time::{Duration, Instant};

use checkpoint_core::source::Source;
use futures_util::future::join;

use super::{commit_one, pause};
use crate::sources::{SourceLog, env_count};
use crate::{CaseResult, Failure, ensure};

/// How long `wait` is watched with nothing committed.
const QUIET: Duration = Duration::from_millis(200);

/// How often `wait` may resolve spuriously within [`QUIET`] (the contract allows spurious
/// wake-ups; a busy loop makes thousands).
const SPURIOUS: u32 = 4;

/// How long the case lets pass before it commits, with a `wait` already pending.
const BEFORE_COMMIT: Duration = Duration::from_millis(100);

/// The bound on a wake-up, from `CHECKPOINT_SOURCE_WAKE_MS` (default 2000).
fn wake_bound() -> Duration {
    Duration::from_millis(env_count("CHECKPOINT_SOURCE_WAKE_MS", 2_000))
}

/// `wait` on an empty partition stays pending (at most a few spurious returns) for 200 ms; a
/// `wait` pending when an entry is committed resolves within the bound after the commit, and
/// the entry is then readable; `wait` with something readable resolves at once; and after the
/// reader has read it, `wait` from its `next` is pending again.
pub async fn wait_wakes_after_a_commit<L: SourceLog>(log: &L) -> CaseResult {
    let source = log.source();
    stays_pending(source, 0, 0).await?;
    let bound = wake_bound();
    let (woken, committed) = join(
        async {
            let started = Instant::now();
            // A spurious return before the commit is allowed: wait again until readable.
            while started.elapsed() < BEFORE_COMMIT + bound {
                let left = (BEFORE_COMMIT + bound).saturating_sub(started.elapsed());
                if tokio::time::timeout(left, source.wait(0, 0)).await.is_err() {
                    break;
                }
                if !source.read(0, 0, 1).await?.entries.is_empty() {
                    return Ok::<_, Failure>(true);
                }
                pause(1).await;
            }
            Ok(false)
        },
        async {
            tokio::time::sleep(BEFORE_COMMIT).await;
            commit_one(log, 0, "wake").await?;
            Ok::<_, Failure>(())
        },
    )
    .await;
    committed?;
    ensure!(
        woken?,
        "a `wait` pending when an entry was committed did not resolve (to a readable entry) \
         within {bound:?} after the commit: a lost wake-up"
    );
    let started = Instant::now();
    let at_once = tokio::time::timeout(bound, source.wait(0, 0)).await;
    ensure!(
        matches!(at_once, Ok(Ok(()))),
        "`wait` from 0 with an entry readable did not resolve within {bound:?}: {at_once:?} \
         (after {:?})",
        started.elapsed()
    );
    let page = source.read(0, 0, 10).await?;
    stays_pending(source, 0, page.next).await
}

/// `wait(partition, from)` resolves at most [`SPURIOUS`] times within [`QUIET`], with nothing
/// committed.
async fn stays_pending<S: Source + ?Sized>(source: &S, partition: u32, from: u64) -> CaseResult {
    let started = Instant::now();
    let mut returns = 0u32;
    while let Some(left) = QUIET.checked_sub(started.elapsed()) {
        match tokio::time::timeout(left, source.wait(partition, from)).await {
            Err(_pending) => break,
            Ok(result) => result?,
        }
        returns += 1;
        if returns > SPURIOUS {
            return Err(Failure::new(format!(
                "`wait({partition}, {from})` returned {returns} times within {:?} with nothing \
                 committed: a busy loop, not a wait",
                started.elapsed()
            )));
        }
    }
    Ok(())
}
