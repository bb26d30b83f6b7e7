//! Reading a partition page by page, checking every page against the clauses a single page
//! must keep.

use checkpoint_core::source::{Entry, Page, Source};

use crate::Failure;

/// What is wrong with `page`, read from `from` with `max`, if anything: entries out of order,
/// below `from` or more than `max`, or a `next` below `from` or not past the last entry.
pub(crate) fn page_fault(from: u64, max: usize, page: &Page) -> Option<String> {
    if page.entries.len() > max {
        return Some(format!(
            "a read with max = {max} returned {} entries",
            page.entries.len()
        ));
    }
    if let Some(first) = page.entries.first()
        && first.position < from
    {
        return Some(format!(
            "a read from {from} returned position {}, below `from`: an entry below a `next` the \
             reader was given (a late arrival)",
            first.position
        ));
    }
    if let Some(pair) = page
        .entries
        .windows(2)
        .find(|pair| pair[1].position <= pair[0].position)
    {
        return Some(format!(
            "a read from {from} returned position {} after {}: positions must strictly increase",
            pair[1].position, pair[0].position
        ));
    }
    if page.next < from {
        return Some(format!(
            "a read from {from} returned next = {}, below `from`",
            page.next
        ));
    }
    if let Some(last) = page.entries.last()
        && page.next <= last.position
    {
        return Some(format!(
            "a read from {from} returned next = {} though its last entry is at {}: the next read \
             would return it again",
            page.next, last.position
        ));
    }
    None
}

/// Reads `partition` from `from` to its readable end (the first empty page), with page sizes
/// from `max`, checking every page. Returns the entries and where the next read would start.
pub(crate) async fn read_to_end<S: Source + ?Sized>(
    source: &S,
    partition: u32,
    from: u64,
    mut max: impl FnMut() -> usize,
) -> Result<(Vec<Entry>, u64), Failure> {
    /// A bound on pages, so a source whose pages never end fails instead of hanging.
    const PAGES: usize = 100_000;
    let mut entries = Vec::new();
    let mut next = from;
    for _ in 0..PAGES {
        let size = max();
        let page = source.read(partition, next, size).await?;
        if let Some(fault) = page_fault(next, size, &page) {
            return Err(Failure::new(format!("partition {partition}: {fault}")));
        }
        next = page.next;
        if page.entries.is_empty() {
            return Ok((entries, next));
        }
        entries.extend(page.entries);
    }
    Err(Failure::new(format!(
        "partition {partition}: {PAGES} pages from {from} and still no empty page"
    )))
}

/// The payloads of `entries`, as text where they are (the kit writes text), for messages.
pub(crate) fn payloads(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|entry| String::from_utf8_lossy(&entry.payload).into_owned())
        .collect()
}
