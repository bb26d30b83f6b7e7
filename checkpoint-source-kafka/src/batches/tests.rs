//! Pages from record batches as a transactional producer and a broker write them: aborted and
//! committed transactions, their markers, gaps, a batch cut short, the last stable offset.

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::{Aborted, Fetched, page, readable};

/// Who wrote a batch.
#[derive(Clone, Copy)]
enum Writer {
    Plain,
    /// A transactional producer with this id.
    Transaction(i64),
}

fn record(offset: i64, writer: Writer, control: bool, key: Option<Bytes>, value: &str) -> Record {
    let (transactional, producer_id) = match writer {
        Writer::Plain => (false, -1),
        Writer::Transaction(id) => (true, id),
    };
    Record {
        transactional,
        control,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id,
        producer_epoch: 0,
        timestamp_type: TimestampType::Creation,
        offset,
        // The codec keeps records in one batch while `offset - sequence` is the same.
        sequence: i32::try_from(offset).expect("small offsets"),
        timestamp: 1_700_000_000_000 + offset,
        key,
        value: Some(Bytes::copy_from_slice(value.as_bytes())),
        headers: IndexMap::new(),
    }
}

/// A batch of records at `offsets`.
fn batch(out: &mut BytesMut, writer: Writer, offsets: &[i64]) {
    let records: Vec<Record> = offsets
        .iter()
        .map(|offset| record(*offset, writer, false, None, &format!("r{offset}")))
        .collect();
    encode(out, &records);
}

/// A transaction's marker at `offset`: an abort (type 0) or a commit (type 1).
fn marker(out: &mut BytesMut, producer: i64, offset: i64, commit: bool) {
    let key = Bytes::from(vec![0, 0, 0, u8::from(commit)]);
    let mut marker = record(offset, Writer::Transaction(producer), true, Some(key), "");
    marker.value = Some(Bytes::from_static(&[0, 0, 0, 0, 0, 0]));
    encode(out, &[marker]);
}

fn encode(out: &mut BytesMut, records: &[Record]) {
    let options = RecordEncodeOptions {
        version: 2,
        compression: Compression::None,
    };
    RecordBatchEncoder::encode(out, records, &options).expect("the codec encodes a batch");
}

fn fetched(records: BytesMut, aborted: &[(i64, i64)], stable_end: i64) -> Fetched {
    Fetched {
        records: records.freeze(),
        aborted: aborted
            .iter()
            .map(|(producer, first_offset)| Aborted {
                producer: *producer,
                first_offset: *first_offset,
            })
            .collect(),
        stable_end,
    }
}

fn positions(fetched: Fetched, from: u64, max: usize) -> (Vec<u64>, u64) {
    let page = page(fetched, from, max).expect("a page");
    (page.entries.iter().map(|e| e.position).collect(), page.next)
}

#[test]
fn plain_records_are_read_in_order_and_next_follows_the_last() {
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Plain, &[0, 1, 2]);
    batch(&mut out, Writer::Plain, &[3, 4]);
    let page = page(fetched(out, &[], 5), 0, 10).expect("a page");
    let payloads: Vec<&[u8]> = page.entries.iter().map(|e| e.payload.as_slice()).collect();
    assert_eq!(payloads, [b"r0", b"r1", b"r2", b"r3", b"r4"]);
    assert_eq!(page.next, 5);
    assert!(page.entries.iter().all(|e| e.appended_at.is_some()));
}

#[test]
fn a_full_page_ends_inside_a_batch_and_the_next_read_goes_on_there() {
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Plain, &[0, 1, 2, 3]);
    let records = out.clone();
    assert_eq!(positions(fetched(out, &[], 4), 0, 2), (vec![0, 1], 2));
    // The broker sends the whole batch again; the records before `from` are dropped.
    assert_eq!(positions(fetched(records, &[], 4), 2, 10), (vec![2, 3], 4));
}

#[test]
fn an_aborted_transaction_is_dropped_and_its_marker_carried_over() {
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Plain, &[0, 1]);
    batch(&mut out, Writer::Transaction(7), &[2, 3]);
    marker(&mut out, 7, 4, false);
    batch(&mut out, Writer::Plain, &[5]);
    assert_eq!(
        positions(fetched(out, &[(7, 2)], 6), 0, 10),
        (vec![0, 1, 5], 6)
    );
}

#[test]
fn a_committed_transaction_is_read_and_a_trailing_marker_moves_next_past_it() {
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Transaction(8), &[0, 1]);
    marker(&mut out, 8, 2, true);
    assert_eq!(positions(fetched(out, &[], 3), 0, 10), (vec![0, 1], 3));
}

#[test]
fn interleaved_transactions_drop_only_the_aborted_producer() {
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Transaction(7), &[0]);
    batch(&mut out, Writer::Transaction(8), &[1]);
    batch(&mut out, Writer::Transaction(7), &[2]);
    marker(&mut out, 8, 3, true);
    marker(&mut out, 7, 4, false);
    // Producer 7 starts again after its abort: that transaction is not aborted.
    batch(&mut out, Writer::Transaction(7), &[5]);
    marker(&mut out, 7, 6, true);
    assert_eq!(
        positions(fetched(out, &[(7, 0)], 7), 0, 10),
        (vec![1, 5], 7)
    );
}

#[test]
fn nothing_at_or_past_the_last_stable_offset_is_read_or_skipped() {
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Plain, &[0, 1]);
    // An open transaction at 2, then plain records behind it: all held back.
    batch(&mut out, Writer::Transaction(9), &[2]);
    batch(&mut out, Writer::Plain, &[3]);
    let records = out.clone();
    assert_eq!(positions(fetched(out, &[], 2), 0, 10), (vec![0, 1], 2));
    let held = fetched(records, &[], 2);
    assert!(
        !readable(&held, 2),
        "nothing is readable at the last stable offset"
    );
    assert_eq!(positions(held, 2, 10), (vec![], 2));
}

#[test]
fn a_batch_cut_short_is_left_for_the_next_read() {
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Plain, &[0, 1]);
    let first = out.len();
    batch(&mut out, Writer::Plain, &[2, 3]);
    assert!(
        out.len() - first > 5,
        "the second batch is more than its last 5 bytes"
    );
    let cut = out.len() - 5;
    out.truncate(cut);
    assert_eq!(positions(fetched(out, &[], 4), 0, 10), (vec![0, 1], 2));
}

#[test]
fn offsets_compaction_removed_are_carried_over() {
    let mut out = BytesMut::new();
    // A batch whose records 1 and 2 were compacted away: offsets 0 and 3 remain.
    batch(&mut out, Writer::Plain, &[0, 3]);
    batch(&mut out, Writer::Plain, &[7]);
    assert_eq!(positions(fetched(out, &[], 8), 1, 10), (vec![3, 7], 8));
}

#[test]
fn a_wait_sees_a_marker_or_an_aborted_batch_as_something_to_read() {
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Transaction(7), &[0]);
    marker(&mut out, 7, 1, false);
    let records = fetched(out, &[(7, 0)], 2);
    assert!(readable(&records, 0));
    assert!(readable(&records, 1));
    assert!(!readable(&records, 2));
    assert_eq!(positions(records, 0, 10), (vec![], 2));
}

#[test]
fn records_of_one_call_are_one_batch() {
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Plain, &[0, 1, 2]);
    let length = i32::from_be_bytes([out[8], out[9], out[10], out[11]]);
    assert_eq!(usize::try_from(length).expect("a length") + 12, out.len());
}

#[test]
fn the_whole_end_is_past_the_last_whole_stable_batch() {
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Plain, &[0, 1]);
    batch(&mut out, Writer::Plain, &[2]);
    batch(&mut out, Writer::Plain, &[3]);
    assert_eq!(super::whole_end(&fetched(out.clone(), &[], 4)), Some(4));
    assert_eq!(super::whole_end(&fetched(out.clone(), &[], 3)), Some(3));
    out.truncate(out.len() - 3);
    assert_eq!(super::whole_end(&fetched(out, &[], 4)), Some(3));
    assert_eq!(super::whole_end(&fetched(BytesMut::new(), &[], 4)), None);
}

#[test]
fn a_kept_fetch_serves_the_reads_inside_it_until_one_reads_it_to_its_end() {
    let cache = crate::cache::Cache::default();
    let mut out = BytesMut::new();
    batch(&mut out, Writer::Plain, &[10, 11, 12, 13]);
    let records = fetched(out, &[], 14);
    cache.keep(0, 10, records.clone(), 12);
    assert!(
        cache.covering(0, 9).is_none(),
        "below where it was fetched from"
    );
    assert!(cache.covering(1, 12).is_none(), "another partition");
    let kept = cache.covering(0, 12).expect("kept");
    assert_eq!(positions(kept, 12, 10), (vec![12, 13], 14));
    assert!(cache.covering(0, 14).is_none(), "past its end");
    cache.keep(0, 10, records.clone(), 14);
    assert!(
        cache.covering(0, 12).is_none(),
        "read to its end: forgotten"
    );
    cache.keep(0, 10, records, 12);
    cache.forget(0);
    assert!(cache.covering(0, 12).is_none(), "forgotten on demand");
}
