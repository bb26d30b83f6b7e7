//! `wait`: pending while nothing is committed, woken soon after a commit.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use checkpoint_core::source::Source;
use futures_util::future::join;

use super::{commit_one, pause};
use crate::sources::catch_up::catch_up;
use crate::sources::{SourceLog, env_count};
use crate::{CaseResult, Failure, ensure};

/// How long `wait` is watched with nothing committed.
const QUIET: Duration = Duration::from_millis(200);

/// How often `wait` may resolve spuriously within [`QUIET`] (the contract allows spurious
/// wake-ups; a busy loop makes thousands).
const SPURIOUS: u32 = 4;

/// How long the case lets pass before it commits, with a `wait` already pending.
const BEFORE_COMMIT: Duration = Duration::from_millis(100);

/// How often a pending `wait` is checked against its bound.
const CHECK: Duration = Duration::from_millis(20);

/// The bound on a wake-up, from `CHECKPOINT_SOURCE_WAKE_MS` (default 2000).
fn wake_bound() -> Duration {
    Duration::from_millis(env_count("CHECKPOINT_SOURCE_WAKE_MS", 2_000))
}

/// `wait` on an empty partition stays pending (at most a few spurious returns) for 200 ms; a
/// `wait` pending when an entry is committed resolves within the bound after the entry became
/// readable (a source may delay it, for at most `CHECKPOINT_SOURCE_CATCH_UP_MS`), and the entry
/// is then readable; `wait` with something readable resolves at once; and after the reader has
/// read it, `wait` from its `next` is pending again.
pub async fn wait_wakes_after_a_commit<L: SourceLog>(log: &L) -> CaseResult {
    let source = log.source();
    stays_pending(source, 0, 0).await?;
    let bound = wake_bound();
    let readable_at = OnceLock::new();
    let (woken, readable) = join(
        woken_once_readable(source, &readable_at, bound),
        commit_and_watch(log, &readable_at),
    )
    .await;
    ensure!(
        readable?,
        "an entry committed was still not readable {:?} after its commit \
         (CHECKPOINT_SOURCE_CATCH_UP_MS sets how long)",
        catch_up()
    );
    ensure!(
        woken?,
        "a `wait` pending when an entry was committed did not resolve (to a readable entry) \
         within {bound:?} after the entry became readable: a lost wake-up"
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

/// Commits an entry after [`BEFORE_COMMIT`], then reads until it is readable (at most
/// [`catch_up`]) and notes when: whether it became readable.
async fn commit_and_watch<L: SourceLog>(
    log: &L,
    readable_at: &OnceLock<Instant>,
) -> Result<bool, Failure> {
    tokio::time::sleep(BEFORE_COMMIT).await;
    commit_one(log, 0, "wake").await?;
    let committed = Instant::now();
    let limit = catch_up();
    while committed.elapsed() < limit {
        if !log.source().read(0, 0, 1).await?.entries.is_empty() {
            let _ = readable_at.set(Instant::now());
            return Ok(true);
        }
        pause(1).await;
    }
    Ok(false)
}

/// Waits from 0 until a `wait` resolves to a readable entry (a spurious return before the
/// commit is allowed: it waits again): false when a `wait` is still pending `bound` after
/// the entry became readable, or the entry never did. One `wait` call is kept pending across
/// the checks, so a source whose wake-up is lost is not saved by being called again.
async fn woken_once_readable<S: Source + ?Sized>(
    source: &S,
    readable_at: &OnceLock<Instant>,
    bound: Duration,
) -> Result<bool, Failure> {
    let started = Instant::now();
    let give_up = BEFORE_COMMIT + catch_up() + bound;
    loop {
        let mut wait = std::pin::pin!(source.wait(0, 0));
        loop {
            if let Ok(result) = tokio::time::timeout(CHECK, wait.as_mut()).await {
                result?;
                break;
            }
            let late = match readable_at.get() {
                Some(at) => at.elapsed() > bound,
                None => started.elapsed() > give_up,
            };
            if late {
                return Ok(false);
            }
        }
        if !source.read(0, 0, 1).await?.entries.is_empty() {
            return Ok(true);
        }
        pause(1).await;
    }
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
