//! Proof of teeth for the source cases: each broken reader is caught by the case written for
//! its flaw, with that case's message; the same reader without a flaw passes them all.

use checkpoint_conformance::sources::cases;
use checkpoint_conformance::sources::sequence::SequenceSourceLog;
use checkpoint_conformance::{__private::BoxFuture, CaseResult};

use crate::broken_sources::{BrokenSource, SourceFlaw};
use crate::broken_sources::{IsolationFlaw, KafkaReader};

type Log = SequenceSourceLog<BrokenSource>;
type Run = for<'a> fn(&'a Log) -> BoxFuture<'a, CaseResult>;

macro_rules! table {
    ($($case:ident)*) => {
        &[$((stringify!($case), {
            fn run(log: &Log) -> BoxFuture<'_, CaseResult> {
                Box::pin(cases::$case(log))
            }
            run as Run
        })),*]
    };
}

const CASES: &[(&str, Run)] = table! {
    no_late_arrivals_under_concurrent_writers
    reads_from_every_position_agree
    sparse_positions_are_read_in_order
    empty_partitions_read_empty
    pages_respect_max_and_keep_their_last_entry
    wait_wakes_after_a_commit
    head_follows_the_readable_end
    heads_agree_with_head
    source_invalid_inputs_are_rejected
    partitions_grow_and_keep_their_entries
};

/// Runs the named cases (all when `only` is empty), each on a fresh log read with `flaw`:
/// the failing ones and their messages.
fn failures(flaw: SourceFlaw, only: &[&str]) -> Vec<(&'static str, String)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let mut failing = Vec::new();
        for &(name, run) in CASES
            .iter()
            .filter(|(name, _)| only.is_empty() || only.contains(name))
        {
            let log = BrokenSource::log(flaw);
            if let Err(failure) = run(&log).await {
                failing.push((name, failure.to_string()));
            }
        }
        failing
    })
}

/// `case` catches `flaw`, with a message that contains `message`.
fn assert_caught(flaw: SourceFlaw, case: &str, message: &str) {
    let failing = failures(flaw, &[case]);
    println!("{flaw:?}: {failing:?}");
    match failing.iter().find(|(name, _)| *name == case) {
        Some((_, text)) => assert!(
            text.contains(message),
            "{case} caught {flaw:?}, but its message does not say {message:?}: {text}"
        ),
        None => panic!("the source kit passed a reader with flaw {flaw:?} in `{case}`"),
    }
}

#[test]
fn the_watermark_reader_passes_every_case() {
    let failing = failures(SourceFlaw::None, &[]);
    assert!(failing.is_empty(), "the correct reader failed: {failing:?}");
}

#[test]
fn position_after_checkpoint_over_a_sequence_is_caught() {
    assert_caught(
        SourceFlaw::AfterCheckpoint,
        "no_late_arrivals_under_concurrent_writers",
        "a late arrival",
    );
}

#[test]
fn xmin_ordered_by_position_is_caught() {
    assert_caught(
        SourceFlaw::XminOrderedByPosition,
        "no_late_arrivals_under_concurrent_writers",
        "a late arrival",
    );
}

#[test]
fn skipping_a_gap_after_a_timeout_is_caught() {
    assert_caught(
        SourceFlaw::SkipsGapAfterTimeout,
        "no_late_arrivals_under_concurrent_writers",
        "a late arrival",
    );
}

#[test]
fn dropping_the_last_entry_of_a_page_is_caught() {
    assert_caught(
        SourceFlaw::DropsLastOfPage,
        "pages_respect_max_and_keep_their_last_entry",
        "a page dropped it",
    );
}

#[test]
fn a_lost_wake_up_is_caught() {
    assert_caught(
        SourceFlaw::LostWakeUp,
        "wait_wakes_after_a_commit",
        "a lost wake-up",
    );
}

#[test]
fn a_busy_wait_is_caught() {
    assert_caught(
        SourceFlaw::BusyWait,
        "wait_wakes_after_a_commit",
        "a busy loop",
    );
}

#[test]
fn a_count_that_drops_back_after_a_growth_is_caught() {
    assert_caught(
        SourceFlaw::CountDrops,
        "partitions_grow_and_keep_their_entries",
        "the count never decreases",
    );
}

#[test]
fn a_count_found_but_not_raised_is_caught() {
    assert_caught(
        SourceFlaw::StaleCount,
        "partitions_grow_and_keep_their_entries",
        "it must be at least what was found",
    );
}

#[test]
fn a_growth_that_renumbers_partitions_is_caught() {
    assert_caught(
        SourceFlaw::Renumbers,
        "partitions_grow_and_keep_their_entries",
        "moved entries",
    );
}

#[test]
fn heads_answered_in_another_order_than_asked_is_caught() {
    assert_caught(
        SourceFlaw::HeadsInPartitionOrder,
        "heads_agree_with_head",
        "against head of each",
    );
}

/// Runs the no-late-arrival case on a fresh Kafka log read with `flaw`: its failure's
/// message, or `None` when the reader passed.
fn kafka_failure(flaw: IsolationFlaw) -> Option<String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let log = KafkaReader::log(flaw);
        cases::no_late_arrivals_under_concurrent_writers(&log)
            .await
            .err()
            .map(|failure| failure.to_string())
    })
}

#[test]
fn a_read_uncommitted_reader_of_a_kafka_log_is_caught() {
    let failure = kafka_failure(IsolationFlaw::ReadUncommitted)
        .expect("the source kit passed a read-uncommitted reader of a Kafka log");
    assert!(
        failure.contains("read entries whose transaction rolled back"),
        "the kit caught the read-uncommitted reader, but not for the aborted records: {failure}"
    );
}

#[test]
fn a_kafka_reader_bounded_by_the_high_watermark_is_caught() {
    let failure = kafka_failure(IsolationFlaw::HighWatermark)
        .expect("the source kit passed a Kafka reader bounded by the high watermark");
    assert!(
        failure.contains("(a late arrival)"),
        "the kit caught the high-watermark reader, but not as a late arrival: {failure}"
    );
}
