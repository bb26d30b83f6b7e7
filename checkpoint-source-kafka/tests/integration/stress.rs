//! Concurrent producers, readers following every partition, and the broker killed and
//! restarted twice meanwhile: every acknowledged record is read by every reader exactly once,
//! in offset order, none skipped; a record read that was never acknowledged is one whose
//! producer's answer was lost (it retried, so it may be there twice, at two offsets).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use checkpoint_core::source::{Entry, Source};
use checkpoint_source_kafka::{KafkaSource, KafkaSourceConfig};
use tokio::sync::Mutex;

use crate::broker::Broker;
use crate::support::{create, unique_topic};

const PARTITIONS: u32 = 4;
const WRITERS: usize = 4;
const READERS: usize = 2;
const WRITING: Duration = Duration::from_secs(12);

/// What the producers know: each record acknowledged (partition, offset → payload), and every
/// payload sent at all.
#[derive(Default)]
struct Produced {
    acknowledged: BTreeMap<(u32, u64), String>,
    attempted: HashSet<String>,
    retries: usize,
}

#[tokio::test]
async fn producers_readers_and_broker_restarts_lose_skip_and_repeat_nothing() {
    let mut broker = Broker::start("stress").await;
    let config = KafkaSourceConfig::new([broker.address()], unique_topic("stress"), PARTITIONS)
        .expect("a valid configuration")
        .with_timeout(Duration::from_secs(3))
        .with_wait_max(Duration::from_millis(300));
    let source = Arc::new(create(config).await);
    let produced = Arc::new(Mutex::new(Produced::default()));
    let writing = Arc::new(AtomicBool::new(true));
    let started = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| tokio::spawn(produce(Arc::clone(&source), Arc::clone(&produced), writer)))
        .collect();
    let readers: Vec<_> = (0..READERS)
        .flat_map(|_| (0..PARTITIONS).map(|p| (p, Arc::clone(&source), Arc::clone(&writing))))
        .map(|(partition, source, writing)| tokio::spawn(follow(source, partition, writing)))
        .collect();
    for _ in 0..2 {
        tokio::time::sleep(WRITING / 3).await;
        broker.kill().await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        broker.restart().await;
    }
    for writer in writers {
        writer.await.expect("a writer");
    }
    writing.store(false, Ordering::Release);
    let mut read = Vec::new();
    for reader in readers {
        read.push(reader.await.expect("a reader"));
    }
    let produced = produced.lock().await;
    judge(&produced, &read, started.elapsed());
}

/// Produces for [`WRITING`], to random partitions; a failed produce is sent again (the same
/// payload) until acknowledged.
async fn produce(source: Arc<KafkaSource>, produced: Arc<Mutex<Produced>>, writer: usize) {
    let mut rng = fastrand::Rng::with_seed(writer as u64);
    let until = Instant::now() + WRITING;
    let mut n = 0;
    while Instant::now() < until {
        let partition = rng.u32(0..PARTITIONS);
        let payload = format!("w{writer}-{n}");
        n += 1;
        produced.lock().await.attempted.insert(payload.clone());
        loop {
            match source
                .append(partition, Some(&format!("w{writer}")), payload.clone())
                .await
            {
                Ok(offset) => {
                    produced
                        .lock()
                        .await
                        .acknowledged
                        .insert((partition, offset), payload);
                    break;
                }
                Err(error) if error.is_retryable() => {
                    produced.lock().await.retries += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(error) => panic!("writer {writer}: {error:?}"),
            }
        }
    }
}

/// Reads `partition` from 0, page after page, waiting when there is nothing, retrying what
/// fails while the broker is away, until the writers are done and a read comes back empty.
async fn follow(
    source: Arc<KafkaSource>,
    partition: u32,
    writing: Arc<AtomicBool>,
) -> (u32, Vec<Entry>) {
    let mut entries = Vec::new();
    let mut from = 0;
    loop {
        let done = !writing.load(Ordering::Acquire);
        match source.read(partition, from, 50).await {
            Ok(page) if page.entries.is_empty() && done => return (partition, entries),
            Ok(page) if page.entries.is_empty() => {
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), source.wait(partition, page.next))
                        .await;
                from = page.next;
            }
            Ok(page) => {
                from = page.next;
                entries.extend(page.entries);
            }
            Err(error) if error.is_retryable() => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(error) => panic!("reader of partition {partition}: {error:?}"),
        }
    }
}

fn judge(produced: &Produced, read: &[(u32, Vec<Entry>)], elapsed: Duration) {
    let mut unacknowledged = 0;
    for (partition, entries) in read {
        let positions: Vec<u64> = entries.iter().map(|e| e.position).collect();
        assert!(
            positions.windows(2).all(|pair| pair[0] < pair[1]),
            "partition {partition}: positions not strictly increasing (a record read twice or out of order)"
        );
        let got: BTreeMap<u64, String> = entries
            .iter()
            .map(|e| {
                (
                    e.position,
                    String::from_utf8(e.payload.clone()).expect("text"),
                )
            })
            .collect();
        let missing: Vec<_> = produced
            .acknowledged
            .iter()
            .filter(|((p, offset), payload)| p == partition && got.get(offset) != Some(payload))
            .collect();
        assert!(
            missing.is_empty(),
            "partition {partition}: acknowledged but not read: {missing:?}"
        );
        for (offset, payload) in &got {
            assert!(
                produced.attempted.contains(payload),
                "partition {partition} offset {offset}: {payload} was never sent"
            );
            if !produced.acknowledged.contains_key(&(*partition, *offset)) {
                unacknowledged += 1;
            }
        }
    }
    let read_total: usize = read.iter().map(|(_, entries)| entries.len()).sum();
    eprintln!(
        "kafka stress: {} acknowledged, {} produce retries, {WRITERS} writers, {READERS} readers \
         x {PARTITIONS} partitions read {read_total} records ({} per reader), {unacknowledged} \
         read but never acknowledged (answers lost to a kill), 0 skipped, 0 read twice, 2 broker \
         kills, {:.1} s",
        produced.acknowledged.len(),
        produced.retries,
        read_total / READERS,
        elapsed.as_secs_f64()
    );
}
