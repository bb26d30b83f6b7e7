//! Writers publishing to every partition while readers read, restart from random checkpoints
//! and check every page against what they read before; at the end every acknowledged entry was
//! read exactly once per partition, in order, and nothing else but entries whose publish
//! failed (which may or may not be stored).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use checkpoint_core::source::{Page, Source};
use checkpoint_source_nats::NatsSource;
use tokio::sync::Mutex;

use crate::support::TestStream;

/// What one reader of one partition has read along its chain of checkpoints.
#[derive(Default)]
pub struct Chain {
    /// Every entry read, by position.
    pub seen: BTreeMap<u64, Vec<u8>>,
    /// The highest `next` any read returned: below it, `seen` is the whole partition.
    pub frontier: u64,
    /// Every `next` returned: the checkpoints a restart may resume at.
    pub checkpoints: Vec<u64>,
}

impl Chain {
    /// Checks a page read from `from` (at or below the frontier) against what was read
    /// before, and takes in what it adds.
    pub fn check(&mut self, from: u64, page: &Page) -> Result<(), String> {
        if page.next < from {
            return Err(format!("next {} below from {from}", page.next));
        }
        let mut previous = None;
        for entry in &page.entries {
            let position = entry.position;
            if position < from || position >= page.next || previous.is_some_and(|p| p >= position) {
                return Err(format!(
                    "entry {position} out of order or out of [from {from}, next {})",
                    page.next
                ));
            }
            previous = Some(position);
            if position < self.frontier {
                if self.seen.get(&position) != Some(&entry.payload) {
                    return Err(format!(
                        "entry {position} below the frontier {} was not read before: a late \
                         arrival",
                        self.frontier
                    ));
                }
            } else {
                self.seen.insert(position, entry.payload.clone());
            }
        }
        // A re-read returns everything read before in its range: nothing skipped.
        let returned: HashSet<u64> = page.entries.iter().map(|e| e.position).collect();
        let upto = page.next.min(self.frontier);
        if let Some(missing) = self
            .seen
            .range(from..upto)
            .map(|(p, _)| *p)
            .find(|p| !returned.contains(p))
        {
            return Err(format!(
                "a read from {from} (next {}) skipped {missing}, read before",
                page.next
            ));
        }
        self.frontier = self.frontier.max(page.next);
        self.checkpoints.push(page.next);
        Ok(())
    }
}

/// What the writers published, by partition: acknowledged (position, payload) and the
/// payloads whose publish failed.
#[derive(Default)]
pub struct Published {
    pub acked: Vec<Vec<(u64, Vec<u8>)>>,
    pub uncertain: HashSet<Vec<u8>>,
    pub errors: u64,
}

/// The run's knobs.
pub struct Plan {
    pub partitions: u32,
    pub writers: u32,
    pub per_writer: u32,
    /// A pause between a writer's publishes, so that writing spans a disruption.
    pub pace: Duration,
    /// Whether errors are expected (a server restart): retried and counted instead of failing.
    pub tolerate_errors: bool,
}

/// Writers and readers over `stream`; `during` runs while they do (a restart). Returns the
/// readers' chains and what was published, after checking them.
pub async fn run<F>(stream: &TestStream, plan: Plan, seed: u64, during: F) -> (u64, u64)
where
    F: std::future::Future<Output = ()>,
{
    let writing_done = Arc::new(AtomicBool::new(false));
    let final_seq = Arc::new(AtomicU64::new(u64::MAX));
    let published = Arc::new(Mutex::new(Published {
        acked: vec![Vec::new(); plan.partitions as usize],
        ..Default::default()
    }));
    let appender = Arc::new(stream.source().await);
    let mut writers = Vec::new();
    for writer in 0..plan.writers {
        let (appender, published) = (Arc::clone(&appender), Arc::clone(&published));
        let (partitions, count, pace) = (plan.partitions, plan.per_writer, plan.pace);
        writers.push(tokio::spawn(async move {
            let mut rng = fastrand::Rng::with_seed(seed ^ (u64::from(writer + 1) * 0x9e37_79b9));
            for i in 0..count {
                let partition = rng.u32(..partitions);
                let payload = format!("w{writer}-{i}").into_bytes();
                if !pace.is_zero() {
                    tokio::time::sleep(pace).await;
                }
                let result = appender.append(partition, None, payload.clone()).await;
                let mut published = published.lock().await;
                match result {
                    Ok(position) => published.acked[partition as usize].push((position, payload)),
                    Err(_) => {
                        published.uncertain.insert(payload);
                        published.errors += 1;
                        drop(published);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }));
    }
    let mut readers = Vec::new();
    for partition in 0..plan.partitions {
        let context = (stream.context.clone(), stream.config.clone());
        let (done, final_seq) = (Arc::clone(&writing_done), Arc::clone(&final_seq));
        let tolerate = plan.tolerate_errors;
        readers.push(tokio::spawn(async move {
            read_partition(context, partition, seed, tolerate, done, final_seq).await
        }));
    }
    during.await;
    for writer in writers {
        writer.await.unwrap();
    }
    let published = Arc::try_unwrap(published).ok().unwrap().into_inner();
    let last = published
        .acked
        .iter()
        .flatten()
        .map(|(p, _)| *p)
        .max()
        .unwrap_or(0);
    final_seq.store(last, Ordering::SeqCst);
    writing_done.store(true, Ordering::SeqCst);
    let mut read_errors = 0;
    for (partition, reader) in readers.into_iter().enumerate() {
        let (chain, errors) = reader.await.unwrap();
        read_errors += errors;
        verify(partition, &chain, &published);
    }
    if !plan.tolerate_errors {
        assert_eq!(published.errors, 0, "publish errors without a disruption");
    }
    (published.errors, read_errors)
}

/// Every acknowledged entry of `partition` read once, at its position; nothing else but
/// uncertain publishes; no payload twice.
fn verify(partition: usize, chain: &Chain, published: &Published) {
    let acked: BTreeMap<u64, Vec<u8>> = published.acked[partition].iter().cloned().collect();
    for (position, payload) in &acked {
        assert_eq!(
            chain.seen.get(position),
            Some(payload),
            "partition {partition}: acknowledged entry {position} not read (a skip)"
        );
    }
    let mut payloads = HashMap::new();
    for (position, payload) in &chain.seen {
        assert!(
            acked.contains_key(position) || published.uncertain.contains(payload),
            "partition {partition}: entry {position} was never published"
        );
        if let Some(first) = payloads.insert(payload.clone(), *position) {
            panic!("partition {partition}: one payload read at {first} and {position}");
        }
    }
}

type Shared = (
    async_nats::jetstream::Context,
    checkpoint_source_nats::NatsSourceConfig,
);

/// One partition's reader: reads on from its frontier, now and then restarts (a new source
/// instance, as a new process would) from a random earlier checkpoint, until it has read past
/// the writers' last position.
async fn read_partition(
    (context, config): Shared,
    partition: u32,
    seed: u64,
    tolerate: bool,
    done: Arc<AtomicBool>,
    final_seq: Arc<AtomicU64>,
) -> (Chain, u64) {
    let mut rng = fastrand::Rng::with_seed(seed ^ ((u64::from(partition) + 1) << 32));
    let open = || NatsSource::new_with_config(context.clone(), config.clone());
    let mut source = open().await.unwrap();
    let mut chain = Chain::default();
    let mut from = 0;
    let mut errors = 0;
    loop {
        if done.load(Ordering::SeqCst) && chain.frontier > final_seq.load(Ordering::SeqCst) {
            return (chain, errors);
        }
        if rng.u64(..10) == 0 && !chain.checkpoints.is_empty() {
            let at = rng.usize(..chain.checkpoints.len());
            from = chain.checkpoints[at];
            if rng.bool() {
                match open().await {
                    Ok(fresh) => source = fresh,
                    Err(e) if tolerate => {
                        errors += 1;
                        let _ = e;
                    }
                    Err(e) => panic!("reopening: {e}"),
                }
            }
        }
        let max = rng.usize(1..=40);
        match source.read(partition, from, max).await {
            Ok(page) => {
                if let Err(problem) = chain.check(from, &page) {
                    panic!("partition {partition} (seed {seed}): {problem}");
                }
                from = page.next;
                if page.entries.is_empty() && !done.load(Ordering::SeqCst) {
                    let bound = Duration::from_millis(100);
                    let _ = tokio::time::timeout(bound, source.wait(partition, from)).await;
                }
            }
            Err(e) if tolerate => {
                errors += 1;
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("partition {partition}: read from {from}: {e}"),
        }
    }
}
