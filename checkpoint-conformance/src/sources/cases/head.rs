//! `head`, and the lag a reader computes from it.

use checkpoint_core::source::Source;

use super::commit_one;
use crate::sources::SourceLog;
use crate::sources::catch_up::read_committed;
use crate::sources::paging::read_to_end;
use crate::{CaseResult, ensure, ensure_eq};

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
