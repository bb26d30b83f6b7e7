//! Reading committed entries: from every position, over gaps, on empty partitions, in pages
//! of every size.

use checkpoint_core::source::Source;

use super::{commit_one, roll_back_one, seeded, text};
use crate::sources::SourceLog;
use crate::sources::catch_up::read_committed;
use crate::sources::paging::{page_fault, payloads, read_to_end};
use crate::sources::rng::{Rng, seed};
use crate::{CaseResult, Failure, ensure, ensure_eq};

/// The most `from` positions [`reads_from_every_position_agree`] tries per partition.
const FROMS: u64 = 300;

/// A gap of at most this many positions is read from every one of them; a larger one (on
/// PostgreSQL a gap spans at least 2^20) from a sample.
const WHOLE_GAP: u64 = 64;

/// How many random positions of a large gap are read from, besides its ends and middle.
const RANDOM_IN_GAP: u64 = 8;

/// Twelve entries per partition (up to three partitions), some rolled back between them; a
/// read from every position up to one past the last, in pages of random sizes, returns exactly
/// the entries a read from 0 returned at or after it: a reader that resumes at a checkpoint
/// sees what a reader that never stopped saw.
pub async fn reads_from_every_position_agree<L: SourceLog>(log: &L) -> CaseResult {
    let seed = seed();
    resume_equivalence(log, seed)
        .await
        .map_err(|failure| seeded(failure, seed))
}

async fn resume_equivalence<L: SourceLog>(log: &L, seed: u64) -> CaseResult {
    let mut rng = Rng::new(seed);
    let partitions = log.source().partitions().min(3);
    let mut expected = vec![Vec::new(); partitions as usize];
    for index in 0..12 {
        for partition in 0..partitions {
            if rng.chance(20) {
                roll_back_one(log, partition, &format!("rolled-back-{partition}-{index}")).await?;
            }
            let payload = format!("p{partition}-e{index}");
            commit_one(log, partition, &payload).await?;
            expected[partition as usize].push(payload);
        }
    }
    for partition in 0..partitions {
        let (all, _) =
            read_committed(log.source(), partition, &expected[partition as usize]).await?;
        ensure_eq!(
            payloads(&all),
            expected[partition as usize],
            "partition {partition}: a read from 0 after twelve commits, one at a time"
        );
        let last = all.last().map_or(0, |entry| entry.position);
        let step = (last + 1).div_ceil(FROMS).max(1);
        for from in (0..=last + 1).step_by(step as usize) {
            let (read, _) =
                read_to_end(log.source(), partition, from, || 1 + rng.below(4) as usize).await?;
            let want: Vec<_> = all.iter().filter(|entry| entry.position >= from).collect();
            let got: Vec<_> = read.iter().collect();
            ensure!(
                got == want,
                "partition {partition}: a read from {from} returned positions {:?}, but a read \
                 from 0 had returned {:?} at or after it",
                read.iter().map(|entry| entry.position).collect::<Vec<_>>(),
                want.iter().map(|entry| entry.position).collect::<Vec<_>>()
            );
        }
    }
    Ok(())
}

/// Entries of partition 0 with gaps between them (rolled-back appends, and appends to
/// partition 1 on a log whose positions are shared): read in order, and a read from inside a
/// gap returns the entry after it: from every position of a gap of up to 64, from both ends,
/// the middle and eight random positions (seeded) of a larger one.
pub async fn sparse_positions_are_read_in_order<L: SourceLog>(log: &L) -> CaseResult {
    let seed = seed();
    gaps(log, seed)
        .await
        .map_err(|failure| seeded(failure, seed))
}

async fn gaps<L: SourceLog>(log: &L, seed: u64) -> CaseResult {
    let partitions = log.source().partitions();
    let mut expected = Vec::new();
    for index in 0..8 {
        if index > 0 {
            roll_back_one(log, 0, &format!("rolled-back-{index}")).await?;
            if partitions > 1 {
                commit_one(log, 1, &format!("other-{index}")).await?;
            }
        }
        let payload = format!("e{index}");
        commit_one(log, 0, &payload).await?;
        expected.push(payload);
    }
    let (all, next) = read_committed(log.source(), 0, &expected).await?;
    ensure_eq!(
        payloads(&all),
        expected,
        "partition 0 read from 0 in one page"
    );
    let mut rng = Rng::new(seed);
    for pair in all.windows(2) {
        let (before, after) = (pair[0].position, pair[1].position);
        for from in inside_gap(before, after, &mut rng) {
            let page = log.source().read(0, from, 1).await?;
            if let Some(fault) = page_fault(from, 1, &page) {
                return Err(Failure::new(fault));
            }
            ensure!(
                page.entries.first().map(|entry| entry.position) == Some(after),
                "a read from {from}, in the gap between positions {before} and {after}, \
                 returned {:?} instead of the entry at {after}",
                page.entries
                    .first()
                    .map(|entry| (entry.position, text(&entry.payload)))
            );
        }
    }
    let last = all.last().map_or(0, |entry| entry.position);
    ensure!(next > last, "after the last entry at {last}, next = {next}");
    Ok(())
}

/// The `from` positions to try between entries at `before` and `after` (`after` itself
/// included): all of a small gap; of a large one both ends, the middle and random ones.
fn inside_gap(before: u64, after: u64, rng: &mut Rng) -> Vec<u64> {
    let (first, last) = (before + 1, after);
    if last - first < WHOLE_GAP {
        return (first..=last).collect();
    }
    let mut froms = vec![first, first + 1, first + (last - first) / 2, last - 1, last];
    froms.extend((0..RANDOM_IN_GAP).map(|_| first + rng.below(last - first + 1)));
    froms.sort_unstable();
    froms.dedup();
    froms
}

/// A partition nothing was written to: empty pages from 0, from 7 and from `i64::MAX`, each
/// with `next` at or above `from`, and no head; still so once another partition has entries;
/// and a read past a partition's last entry is empty too.
pub async fn empty_partitions_read_empty<L: SourceLog>(log: &L) -> CaseResult {
    let source = log.source();
    for partition in 0..source.partitions().min(4) {
        expect_empty(source, partition).await?;
    }
    commit_one(log, 0, "only").await?;
    let (all, next) = read_committed(source, 0, &["only".to_owned()]).await?;
    for partition in 1..source.partitions().min(4) {
        expect_empty(source, partition).await?;
    }
    ensure_eq!(
        payloads(&all),
        vec!["only".to_owned()],
        "partition 0 after one commit"
    );
    let page = source.read(0, next, 10).await?;
    ensure!(
        page.entries.is_empty() && page.next >= next,
        "a read from {next}, past the only entry, returned {} entries and next = {}",
        page.entries.len(),
        page.next
    );
    Ok(())
}

async fn expect_empty<S: Source + ?Sized>(source: &S, partition: u32) -> CaseResult {
    for from in [0, 7, i64::MAX as u64] {
        let page = source.read(partition, from, 10).await?;
        ensure!(
            page.entries.is_empty(),
            "empty partition {partition}: a read from {from} returned {} entries",
            page.entries.len()
        );
        ensure!(
            page.next >= from,
            "empty partition {partition}: a read from {from} returned next = {}, below `from`",
            page.next
        );
    }
    let head = source.head(partition).await?;
    ensure_eq!(head, None, "the head of empty partition {partition}");
    Ok(())
}

/// Ten entries read in pages of every size from 1 to 11: no page is longer than `max`, and the
/// pages together return every entry once, in order; the last entry of a full page is never
/// lost.
pub async fn pages_respect_max_and_keep_their_last_entry<L: SourceLog>(log: &L) -> CaseResult {
    let expected: Vec<String> = (0..10).map(|index| format!("e{index}")).collect();
    for payload in &expected {
        commit_one(log, 0, payload).await?;
    }
    // Once a read returned them all, every paging must: they are readable.
    read_committed(log.source(), 0, &expected).await?;
    for max in 1..=11 {
        let (all, _) = read_to_end(log.source(), 0, 0, || max).await?;
        let got = payloads(&all);
        if got == expected {
            continue;
        }
        let lost = expected.iter().find(|payload| !got.contains(payload));
        return Err(Failure::new(format!(
            "paging with max = {max} returned {got:?}, not the ten entries {expected:?}{}",
            match lost {
                Some(lost) => format!(
                    "; {lost:?} was never returned: a page dropped it and its `next` went past it"
                ),
                None => String::new(),
            }
        )));
    }
    Ok(())
}
