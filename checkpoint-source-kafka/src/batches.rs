//! The records of one fetched partition as a page: only committed ones (read-committed, as
//! Kafka's own consumer filters them), only below the last stable offset, and `next` carried
//! past what holds no record for the reader (control batches, aborted batches, offsets that
//! compaction removed).
//!
//! The broker sends whole record batches (v2 format): a header with the batch's first and last
//! offset, its producer, whether it is transactional or a control batch, then its records.
//! Read-committed is the client's work on top of the broker's: the broker stops at the last
//! stable offset (the first offset of a transaction still open) and lists the aborted
//! transactions in the range (producer id, first offset); the client drops the batches of a
//! producer from its aborted transaction's first offset until that producer's abort marker.

use std::time::{Duration, SystemTime};

use bytes::{Buf, Bytes};
use checkpoint_core::source::{Entry, Page};
use kafka_protocol::records::RecordBatchDecoder;

use crate::error::{WireError, codec};

/// Bytes of a v2 batch header, up to and including its record count.
const HEADER: usize = 61;
/// Attribute bits of a v2 batch.
const TRANSACTIONAL: i16 = 0x10;
const CONTROL: i16 = 0x20;
/// The control record type of an abort marker (a commit marker is 1).
const ABORT_MARKER: i16 = 0;

/// An aborted transaction the broker listed: from `first_offset`, the batches of `producer`
/// are aborted until its abort marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Aborted {
    pub(crate) producer: i64,
    pub(crate) first_offset: i64,
}

/// One partition of a fetch response, as the page needs it.
#[derive(Debug, Clone)]
pub(crate) struct Fetched {
    /// The record batches, as the broker sent them (the last one may be cut short).
    pub(crate) records: Bytes,
    /// The aborted transactions in the range, in any order.
    pub(crate) aborted: Vec<Aborted>,
    /// No record at or above it is returned: the last stable offset (the high watermark when
    /// the broker does not say).
    pub(crate) stable_end: i64,
}

/// The header fields of one batch.
#[derive(Debug, Clone, Copy)]
struct Header {
    base_offset: i64,
    last_offset: i64,
    attributes: i16,
    producer: i64,
}

/// The committed entries of `fetched` at or after `from`, at most `max`, and where the next
/// read starts. Whether the page holds `max` entries or fewer, `next` is never past a record
/// the page did not return and that a later read could.
pub(crate) fn page(fetched: Fetched, from: u64, max: usize) -> Result<Page, WireError> {
    let from_offset = i64::try_from(from).unwrap_or(i64::MAX);
    let mut aborted = fetched.aborted;
    aborted.sort_by_key(|transaction| std::cmp::Reverse(transaction.first_offset));
    let mut aborting: Vec<i64> = Vec::new();
    let mut entries = Vec::new();
    // Past every batch walked (or `from`): no record below it can still be returned.
    let mut next = from_offset;
    let mut rest = fetched.records;
    while let Some((header, batch)) = split_batch(&mut rest)? {
        if header.last_offset >= fetched.stable_end {
            break; // not stable yet (cannot happen with a broker that honours the isolation)
        }
        if header.last_offset < next && header.last_offset >= from_offset {
            // A batch at or below one already walked: a broker that sends a batch twice
            // (tansu 0.6 does, for a fetch from inside a batch) must not make a reader see a
            // record twice, or out of order.
            continue;
        }
        while aborted
            .last()
            .is_some_and(|t| t.first_offset <= header.last_offset)
        {
            if let Some(transaction) = aborted.pop() {
                aborting.push(transaction.producer);
            }
        }
        if header.attributes & CONTROL != 0 {
            if is_abort_marker(&header, batch)? {
                aborting.retain(|producer| *producer != header.producer);
            }
        } else if header.attributes & TRANSACTIONAL != 0 && aborting.contains(&header.producer) {
            // The records of an aborted transaction: never the reader's.
        } else if header.last_offset >= from_offset {
            let full = take_records(batch, next, max, &mut entries)?;
            if full {
                let last = entries.last().map_or(from, |entry| entry.position);
                return Ok(Page {
                    entries,
                    next: last + 1,
                });
            }
        }
        next = next.max(header.last_offset + 1);
    }
    Ok(Page {
        entries,
        next: u64::try_from(next).unwrap_or(from).max(from),
    })
}

/// Takes the next whole batch off `rest`: `None` at the end or before a batch the broker cut
/// short (the next read asks for it again).
fn split_batch(rest: &mut Bytes) -> Result<Option<(Header, Bytes)>, WireError> {
    if rest.len() < 12 {
        return Ok(None);
    }
    let length = i32::from_be_bytes([rest[8], rest[9], rest[10], rest[11]]);
    let total = usize::try_from(length)
        .ok()
        .and_then(|length| length.checked_add(12))
        .ok_or_else(|| WireError::Protocol(format!("a record batch of length {length}")))?;
    if rest.len() < total {
        return Ok(None);
    }
    if total < HEADER {
        return Err(WireError::Protocol(format!(
            "a record batch of {total} bytes"
        )));
    }
    let batch = rest.split_to(total);
    let magic = batch[16];
    if magic != 2 {
        return Err(WireError::Protocol(format!(
            "a record batch in message format v{magic}: this source reads format v2 (Kafka 0.11 \
             and later); convert the topic's old segments or read it with another client"
        )));
    }
    let mut fields = &batch[..];
    let base_offset = fields.get_i64();
    fields.advance(4 + 4 + 1 + 4); // batch length, leader epoch, magic, crc
    let attributes = fields.get_i16();
    let last_offset_delta = fields.get_i32();
    fields.advance(8 + 8); // first and max timestamp
    let producer = fields.get_i64();
    let header = Header {
        base_offset,
        last_offset: base_offset.saturating_add(i64::from(last_offset_delta)),
        attributes,
        producer,
    };
    Ok(Some((header, batch)))
}

/// Whether a control batch is an abort marker (its one record's key: version, type).
fn is_abort_marker(header: &Header, batch: Bytes) -> Result<bool, WireError> {
    let mut batch = batch;
    let set = RecordBatchDecoder::decode(&mut batch).map_err(codec)?;
    let marker = set.records.first().and_then(|record| record.key.as_ref());
    match marker {
        Some(key) if key.len() >= 4 => Ok(i16::from_be_bytes([key[2], key[3]]) == ABORT_MARKER),
        _ => Err(WireError::Protocol(format!(
            "the control batch at offset {} has no marker",
            header.base_offset
        ))),
    }
}

/// Adds the batch's records at or after `from` to `entries` until it holds `max`; `true` when
/// it does.
fn take_records(
    batch: Bytes,
    from: i64,
    max: usize,
    entries: &mut Vec<Entry>,
) -> Result<bool, WireError> {
    let mut batch = batch;
    let set = RecordBatchDecoder::decode(&mut batch).map_err(codec)?;
    for record in set.records {
        if record.offset < from {
            continue; // a broker sends whole batches: the reader started inside this one
        }
        let position = u64::try_from(record.offset)
            .map_err(|_| WireError::Protocol(format!("a record at offset {}", record.offset)))?;
        entries.push(Entry {
            position,
            // Kafka keys are bytes; a key is for ordering, so one that is not UTF-8 is kept as
            // its lossy text (two such keys may then order together, never apart).
            key: record
                .key
                .map(|key| String::from_utf8_lossy(&key).into_owned()),
            payload: record.value.map(|value| value.to_vec()).unwrap_or_default(),
            appended_at: u64::try_from(record.timestamp)
                .ok()
                .map(|millis| SystemTime::UNIX_EPOCH + Duration::from_millis(millis)),
        });
        if entries.len() >= max {
            return Ok(true);
        }
    }
    Ok(false)
}

/// One past the last whole batch of `fetched` below its stable end: what a walk of it can
/// reach. `None` when it holds no such batch.
pub(crate) fn whole_end(fetched: &Fetched) -> Option<u64> {
    let mut rest = fetched.records.clone();
    let mut end = None;
    while let Ok(Some((header, _))) = split_batch(&mut rest) {
        if header.last_offset >= fetched.stable_end {
            break;
        }
        end = u64::try_from(header.last_offset + 1).ok().max(end);
    }
    end
}

/// The offset of the first whole batch of `fetched`, if any.
pub(crate) fn first_base(fetched: &Fetched) -> Option<i64> {
    let mut rest = fetched.records.clone();
    split_batch(&mut rest)
        .ok()
        .flatten()
        .map(|(header, _)| header.base_offset)
}

/// Whether a read of `fetched` from `from` would return an entry or move `next`: a whole batch
/// ending at or after `from`, below the stable end. A batch that cannot be read counts too:
/// the read says what is wrong with it.
pub(crate) fn readable(fetched: &Fetched, from: u64) -> bool {
    let from = i64::try_from(from).unwrap_or(i64::MAX);
    let mut rest = fetched.records.clone();
    loop {
        match split_batch(&mut rest) {
            Ok(None) => return false,
            Err(_) => return true,
            Ok(Some((header, _))) if header.last_offset >= fetched.stable_end => return false,
            Ok(Some((header, _))) if header.last_offset >= from => return true,
            Ok(Some(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests;
