//! `head`, the lag a reader computes from it, and `heads`, every partition's head at once.

use checkpoint_core::source::Source;

use super::commit_one;
use crate::sources::SourceLog;
use crate::sources::catch_up::read_committed;
use crate::sources::paging::read_to_end;
use crate::{CaseResult, Failure, ensure, ensure_eq};

/// No head on a fresh log; after five commits the head is the last position a read returns,
/// and the entries from a checkpoint up to the head are the lag; an entry appended but not
/// committed is not in the head; once committed, it is.
pub async fn head_follows_the_readable_end<L: SourceLog>(log: &L) -> CaseResult {
    let source = log.source();
    for partition in 0..source.partitions().min(4) {
        ensure_eq!(
            source.head(partition).await?,
            None,
            "head of fresh partition {partition}"
        );
    }
    let mut committed: Vec<String> = (0..5).map(|index| format!("e{index}")).collect();
    for payload in &committed {
        commit_one(log, 0, payload).await?;
    }
    let (all, _) = read_committed(source, 0, &committed).await?;
    let last = all.last().map(|entry| entry.position);
    ensure_eq!(
        source.head(0).await?,
        last,
        "head after five commits, which a read returns"
    );
    // A reader that completed two entries has its checkpoint at the third: its lag is three.
    let checkpoint = source.read(0, 0, 2).await?.next;
    let (left, _) = read_to_end(source, 0, checkpoint, || 100).await?;
    ensure_eq!(
        left.len(),
        3,
        "entries from the checkpoint {checkpoint} after reading two"
    );
    ensure_eq!(
        left.last().map(|entry| entry.position),
        source.head(0).await?,
        "the last of the entries left, against head"
    );
    if log.rolls_back() {
        let mut open = log.begin().await?;
        open.append(0, "kit", b"open").await?;
        let head = source.head(0).await?;
        ensure!(
            head == last,
            "head is {head:?} while an append is not committed; the last readable entry is at \
             {last:?}: head counts only what a read can return"
        );
        open.commit().await?;
        committed.push("open".to_owned());
        let (all, _) = read_committed(source, 0, &committed).await?;
        ensure_eq!(
            source.head(0).await?,
            all.last().map(|entry| entry.position),
            "head after the open append committed"
        );
    }
    Ok(())
}

/// `heads` of every partition (asked from the last to the first, partition 0 twice, and two
/// partitions the log does not have) is `head` of each, `None` beyond the count: on a fresh
/// log, with the first and last partitions written and the others empty, while an append is
/// not committed (where the log has transactions), and once it is.
pub async fn heads_agree_with_head<L: SourceLog>(log: &L) -> CaseResult {
    let source = log.source();
    let count = source.partitions();
    let last = count.saturating_sub(1);
    let asked: Vec<u32> = (0..count).rev().chain([0, count, u32::MAX]).collect();
    heads_are_heads(source, &asked, "on a fresh log").await?;
    ensure_eq!(
        source.heads(&[]).await?,
        Vec::<Option<u64>>::new(),
        "heads of no partition"
    );
    let writes = [(0, "heads-a"), (0, "heads-b"), (last, "heads-c")];
    for (partition, payload) in writes {
        commit_one(log, partition, payload).await?;
    }
    for partition in [0, last] {
        let expected: Vec<String> = writes
            .iter()
            .filter(|(written, _)| *written == partition)
            .map(|(_, payload)| (*payload).to_owned())
            .collect();
        read_committed(source, partition, &expected).await?;
    }
    let written = format!("after commits to partitions 0 and {last}, the others empty");
    heads_are_heads(source, &asked, &written).await?;
    if log.rolls_back() {
        let mut open = log.begin().await?;
        open.append(0, "kit", b"heads-open").await?;
        heads_are_heads(source, &asked, "while an append to 0 is not committed").await?;
        open.commit().await?;
        let mut expected = vec!["heads-a".to_owned(), "heads-b".to_owned()];
        expected.extend((last == 0).then(|| "heads-c".to_owned()));
        expected.push("heads-open".to_owned());
        read_committed(source, 0, &expected).await?;
        heads_are_heads(source, &asked, "once that append committed").await?;
    }
    Ok(())
}

/// `heads` of `asked` against `head` of each (`None` for a partition beyond the count).
async fn heads_are_heads<S: Source>(source: &S, asked: &[u32], when: &str) -> Result<(), Failure> {
    let heads = source.heads(asked).await?;
    let mut expected = Vec::with_capacity(asked.len());
    for &partition in asked {
        expected.push(if partition < source.partitions() {
            source.head(partition).await?
        } else {
            None
        });
    }
    ensure_eq!(
        heads,
        expected,
        "heads of partitions {asked:?} against head of each, {when}"
    );
    Ok(())
}
