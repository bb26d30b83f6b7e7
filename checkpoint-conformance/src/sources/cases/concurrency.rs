//! The no-late-arrival clause under concurrent writers: the case the naive readers of event
//! tables fail.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use checkpoint_core::source::Source;
use futures_util::future::{join, join_all};
use tokio::sync::Notify;

use super::{pause, seeded, text};
use crate::sources::catch_up::catch_up;
use crate::sources::paging::{page_fault, read_to_end};
use crate::sources::rng::{Rng, seed};
use crate::sources::{SourceLog, env_count};
use crate::{CaseResult, Failure};

/// How long the long transaction stays open at most (it commits earlier when the other
/// writers are done): long enough for many commits to pass it, short enough that the writers
/// go on after it.
const LONG: Duration = Duration::from_millis(300);

/// How often a reader that waits for missing entries checks whether one was passed over.
const PROBE: Duration = Duration::from_millis(100);

/// When the crossing transactions begin, after the writers.
const LONG_AFTER: Duration = Duration::from_millis(20);

/// How long each crossing transaction waits for the other's step.
const CROSSING: Duration = Duration::from_millis(50);

/// What the writers did, by payload.
#[derive(Debug, Default)]
struct Book {
    written: HashMap<String, u32>,
    committed: HashSet<String>,
    rolled_back: HashSet<String>,
}

struct Run<'a, L> {
    log: &'a L,
    partitions: u32,
    seed: u64,
    book: Mutex<Book>,
    done: AtomicBool,
}

impl<L> Run<'_, L> {
    fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What one reader read.
struct Reader {
    next: Vec<u64>,
    seen: HashMap<String, (u32, u64)>,
}

/// Writers append to up to four partitions in transactions of one to three entries, with
/// random delays before the first append, between appends and before the commit (one in ten
/// sleeps 100–250 ms before committing, one in ten rolls back where the log can); two more
/// cross 20 ms in: a long one takes a position and stays open for 300 ms (or until the others
/// are done) while one that began before it appends after it and commits at once. Readers page through every partition meanwhile, checking each page, and keep
/// reading after the last commit. Every committed entry must be read exactly once by every
/// reader, no rolled-back one ever.
pub async fn no_late_arrivals_under_concurrent_writers<L: SourceLog>(log: &L) -> CaseResult {
    let run = Run {
        log,
        partitions: log.source().partitions().min(4),
        seed: seed(),
        book: Mutex::new(Book::default()),
        done: AtomicBool::new(false),
    };
    crate::ensure!(run.partitions >= 1, "the source has no partition");
    let readers = env_count("CHECKPOINT_SOURCE_READERS", 2);
    let (written, read) = join(
        write_all(&run),
        join_all((0..readers).map(|reader| read_along(&run, reader))),
    )
    .await;
    let seed = run.seed;
    written.map_err(|failure| seeded(failure, seed))?;
    for (reader, result) in read.into_iter().enumerate() {
        let state = result.map_err(|failure| seeded(failure, seed))?;
        judge(&run, reader, &state)
            .await
            .map_err(|failure| seeded(failure, seed))?;
    }
    Ok(())
}

/// The writers and the long transaction; marks the run done when every commit has returned.
async fn write_all<L: SourceLog>(run: &Run<'_, L>) -> CaseResult {
    let result = write_with_a_long_transaction(run).await;
    run.done.store(true, Ordering::SeqCst);
    result
}

async fn write_with_a_long_transaction<L: SourceLog>(run: &Run<'_, L>) -> CaseResult {
    let finished = Notify::new();
    let writers = env_count("CHECKPOINT_SOURCE_WRITERS", 4);
    let writing = async {
        let results = join_all((0..writers).map(|writer| write(run, writer))).await;
        finished.notify_one();
        results
    };
    let (results, crossed) = join(writing, crossed(run, &finished)).await;
    crossed?;
    results.into_iter().collect::<Result<Vec<()>, Failure>>()?;
    Ok(())
}

/// Two transactions that cross, begun once the writers run: `older` begins first, then `long`
/// begins and appends (taking the earlier position), then `older` appends and commits at once,
/// while `long` stays open across the writers' commits for [`LONG`] (or until they are done).
/// On a log that serializes writers (SQLite) they cannot cross: each waits for the other at
/// most [`CROSSING`], and `long` holds the other writers back.
async fn crossed<L: SourceLog>(run: &Run<'_, L>, finished: &Notify) -> CaseResult {
    let (older_begun, long_appended) = (Notify::new(), Notify::new());
    let older = async {
        pause(LONG_AFTER.as_millis() as u64).await;
        let mut older = run.log.begin().await?;
        older_begun.notify_one();
        let _ = tokio::time::timeout(CROSSING, long_appended.notified()).await;
        let payload = "older".to_owned();
        run.book().written.insert(payload.clone(), 0);
        older.append(0, "older", payload.as_bytes()).await?;
        older.commit().await?;
        run.book().committed.insert(payload);
        Ok::<_, Failure>(())
    };
    let long = async {
        let _ = tokio::time::timeout(LONG_AFTER + CROSSING, older_begun.notified()).await;
        let mut long = run.log.begin().await?;
        let payload = "long".to_owned();
        run.book().written.insert(payload.clone(), 0);
        long.append(0, "long", payload.as_bytes()).await?;
        long_appended.notify_one();
        let _ = tokio::time::timeout(LONG, finished.notified()).await;
        long.commit().await?;
        run.book().committed.insert(payload);
        Ok::<_, Failure>(())
    };
    let (older, long) = join(older, long).await;
    older.and(long)
}

async fn write<L: SourceLog>(run: &Run<'_, L>, writer: u64) -> CaseResult {
    let mut rng = Rng::new(run.seed ^ (writer + 1).wrapping_mul(0xA24B_AED4_963E_E407));
    let transactions = env_count("CHECKPOINT_SOURCE_TRANSACTIONS", 30);
    for transaction in 0..transactions {
        let mut tx = run.log.begin().await?;
        pause(rng.below(4)).await;
        let mut mine = Vec::new();
        for append in 0..1 + rng.below(3) {
            let partition = rng.below(u64::from(run.partitions)) as u32;
            let payload = format!("w{writer}-t{transaction}-e{append}");
            run.book().written.insert(payload.clone(), partition);
            tx.append(partition, &format!("writer-{writer}"), payload.as_bytes())
                .await?;
            mine.push(payload);
            pause(rng.below(3)).await;
        }
        if run.log.rolls_back() && rng.chance(10) {
            tx.rollback().await?;
            run.book().rolled_back.extend(mine);
            pause(rng.below(5)).await;
            continue;
        }
        if rng.chance(10) {
            pause(100 + rng.below(150)).await;
        }
        tx.commit().await?;
        run.book().committed.extend(mine);
        // A pause between transactions lets the oldest running one change: without it every
        // writer always holds a transaction open and `xmin` hardly moves.
        pause(rng.below(5)).await;
    }
    Ok(())
}

/// Pages through every partition while the writers write, checking every page, until the
/// writers are done and every committed entry was read (or nothing new came for
/// [`catch_up`]: a source may delay entries, as PostgreSQL does while any transaction of the
/// cluster is open).
async fn read_along<L: SourceLog>(run: &Run<'_, L>, reader: u64) -> Result<Reader, Failure> {
    let source = run.log.source();
    let mut rng = Rng::new(run.seed ^ (reader + 1).wrapping_mul(0x9FB2_1C65_1E98_DF25));
    let mut state = Reader {
        next: vec![0; run.partitions as usize],
        seen: HashMap::new(),
    };
    let mut quiet_since: Option<Instant> = None;
    let limit = catch_up();
    let mut probed = Instant::now();
    for read in 0u64.. {
        let finished = run.done.load(Ordering::SeqCst);
        let mut new = 0;
        for partition in 0..run.partitions {
            let from = state.next[partition as usize];
            let max = 1 + rng.below(8) as usize;
            let page = source.read(partition, from, max).await?;
            if let Some(fault) = page_fault(from, max, &page) {
                return Err(Failure::new(format!(
                    "reader {reader}, partition {partition}, read {read}: {fault}"
                )));
            }
            new += page.entries.len();
            for entry in &page.entries {
                record(run, reader, &mut state, partition, entry)?;
            }
            state.next[partition as usize] = page.next;
        }
        if finished {
            if run
                .book()
                .committed
                .iter()
                .all(|p| state.seen.contains_key(p))
            {
                break;
            }
            let since = *quiet_since.get_or_insert_with(Instant::now);
            if new > 0 {
                quiet_since = Some(Instant::now());
            } else if since.elapsed() > limit {
                break;
            } else if probed.elapsed() > PROBE {
                probed = Instant::now();
                if passed_over(run, &state).await? {
                    break;
                }
            }
        }
        if new == 0 {
            pause(1).await;
        }
    }
    Ok(state)
}

/// Whether a committed entry the reader has not read is now readable below the `next` it
/// goes on from: it will never read it, so waiting longer cannot help (the judge explains it
/// as a late arrival).
async fn passed_over<L: SourceLog>(run: &Run<'_, L>, state: &Reader) -> Result<bool, Failure> {
    for partition in 0..run.partitions {
        let (entries, _) = read_to_end(run.log.source(), partition, 0, || 1000).await?;
        let next = state.next[partition as usize];
        let book = run.book();
        if entries.iter().any(|entry| {
            let payload = text(&entry.payload);
            entry.position < next
                && book.committed.contains(&payload)
                && !state.seen.contains_key(&payload)
        }) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Notes that `reader` read `entry` of `partition`: it must be one the writers wrote, to that
/// partition, and read for the first time.
fn record<L>(
    run: &Run<'_, L>,
    reader: u64,
    state: &mut Reader,
    partition: u32,
    entry: &checkpoint_core::source::Entry,
) -> CaseResult {
    let payload = text(&entry.payload);
    match run.book().written.get(&payload) {
        None => {
            return Err(Failure::new(format!(
                "reader {reader} read {payload:?} at position {} of partition {partition}, which                  no writer wrote (is the log fresh for every case?)",
                entry.position
            )));
        }
        Some(&written) if written != partition => {
            return Err(Failure::new(format!(
                "reader {reader} read {payload:?} in partition {partition}; it was written to                  partition {written}"
            )));
        }
        Some(_) => {}
    }
    if let Some((_, earlier)) = state
        .seen
        .insert(payload.clone(), (partition, entry.position))
    {
        return Err(Failure::new(format!(
            "reader {reader} read {payload:?} twice, at positions {earlier} and {} of partition              {partition}",
            entry.position
        )));
    }
    Ok(())
}

/// Every committed entry read, no rolled-back one; a missing entry is explained by where it is
/// now and how far the reader had gone past it.
async fn judge<L: SourceLog>(run: &Run<'_, L>, reader: usize, state: &Reader) -> CaseResult {
    let (missing, committed) = unread(run, reader, state)?;
    if missing.is_empty() {
        return Ok(());
    }
    let mut lines = Vec::new();
    for (payload, partition) in missing.iter().take(5) {
        lines.push(explain(run, state, payload, *partition).await?);
    }
    Err(Failure::new(format!(
        "reader {reader} never read {} of the {committed} committed entries:\n  {}{}",
        missing.len(),
        lines.join("\n  "),
        if missing.len() > 5 { "\n  ..." } else { "" }
    )))
}

/// The committed entries `reader` did not read, sorted (and how many were committed), after
/// checking that it read no rolled-back one.
fn unread<L>(
    run: &Run<'_, L>,
    reader: usize,
    state: &Reader,
) -> Result<(Vec<(String, u32)>, usize), Failure> {
    let book = run.book();
    let mut rolled_back: Vec<&String> = state
        .seen
        .keys()
        .filter(|payload| book.rolled_back.contains(*payload))
        .collect();
    rolled_back.sort();
    crate::ensure!(
        rolled_back.is_empty(),
        "reader {reader} read entries whose transaction rolled back: {rolled_back:?}"
    );
    let mut missing: Vec<(String, u32)> = book
        .committed
        .iter()
        .filter(|payload| !state.seen.contains_key(*payload))
        .filter_map(|payload| Some((payload.clone(), *book.written.get(payload)?)))
        .collect();
    missing.sort();
    Ok((missing, book.committed.len()))
}

async fn explain<L: SourceLog>(
    run: &Run<'_, L>,
    state: &Reader,
    payload: &str,
    partition: u32,
) -> Result<String, Failure> {
    let (entries, _) = read_to_end(run.log.source(), partition, 0, || 1000).await?;
    let next = state.next[partition as usize];
    let Some(entry) = entries.iter().find(|entry| text(&entry.payload) == payload) else {
        return Ok(format!(
            "{payload:?} of partition {partition}: committed, but not even a read from 0 returns \
             it now"
        ));
    };
    Ok(if entry.position < next {
        format!(
            "{payload:?} at position {} of partition {partition}: the reader's reads had moved \
             on to next = {next} past it, so it appeared below a `next` already returned (a late \
             arrival) or a page left it out",
            entry.position
        )
    } else {
        format!(
            "{payload:?} at position {} of partition {partition}: the reader stayed at next = \
             {next} for {:?} after the last commit (CHECKPOINT_SOURCE_CATCH_UP_MS)",
            entry.position,
            catch_up()
        )
    })
}
