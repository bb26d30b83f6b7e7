//! [`KafkaSource`]: the source's reads, waits and heads, and the partition count it keeps.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use checkpoint_core::source::{Page, Source, SourceError};
use tokio::time::Instant;

use crate::batches;
use crate::cache::Cache;
use crate::cluster::{Cluster, Topic};
use crate::config::KafkaSourceConfig;
use crate::error::setup;
use crate::requests::{End, Fetch, fetch, offset, offsets};
use crate::retry::within;

/// The least a wait leaves between two fetches when the broker answers at once instead of
/// holding the fetch (a broker that does not honour `max_wait_ms`): a slow poll, not a busy
/// loop.
const POLL_FLOOR: Duration = Duration::from_millis(50);

/// The furthest back a read looks for the batch that holds its offset (see
/// `fetch_covering`): more records than any producer puts in one batch.
const MAX_STEP_BACK: u64 = 1 << 20;

/// A Kafka topic's partitions as a [`Source`]: see the [crate](crate) documentation.
pub struct KafkaSource {
    pub(crate) cluster: Cluster,
    pub(crate) config: KafkaSourceConfig,
    partitions: AtomicU32,
    cache: Cache,
}

impl fmt::Debug for KafkaSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaSource")
            .field("bootstrap", &self.config.bootstrap)
            .field("topic", &self.config.topic)
            .field("partitions", &self.partitions())
            .finish_non_exhaustive()
    }
}

impl KafkaSource {
    /// Connects to the cluster and checks the topic before anything is read: a missing topic,
    /// or one with fewer partitions than `config` expects, is [`SourceError::Setup`] saying
    /// what to do. A topic with more partitions grew: the source reads them all.
    pub async fn connect(config: KafkaSourceConfig) -> Result<Self, SourceError> {
        let cluster = Cluster::new(config.bootstrap.clone(), config.topic.clone());
        let topic = within(&cluster, "connect", config.timeout, || cluster.refresh()).await?;
        let partitions = checked_count(&config, topic, config.partitions)?;
        Ok(Self {
            cluster,
            config,
            partitions: AtomicU32::new(partitions),
            cache: Cache::default(),
        })
    }

    /// What the source reads.
    pub fn config(&self) -> &KafkaSourceConfig {
        &self.config
    }

    /// A read from `from` found it outside the partition: below the partition's start the
    /// records were removed (retention, a deletion) and the read goes on at the start, as a
    /// consumer that resets to "earliest" does; above its end nothing is readable yet, as the
    /// contract says of any position past a partition's entries (see the crate doc on a topic
    /// deleted and created again).
    async fn outside(&self, partition: u32, from: u64) -> Result<Page, SourceError> {
        let earliest = within(&self.cluster, "read", self.config.timeout, || {
            offset(&self.cluster, &self.config.topic, partition, End::Earliest)
        })
        .await?;
        match u64::try_from(earliest) {
            Ok(earliest) if from < earliest => Ok(Page {
                entries: Vec::new(),
                next: earliest,
            }),
            _ => Ok(Page {
                entries: Vec::new(),
                next: from,
            }),
        }
    }

    /// A fetch from `from` whose first batch holds `from` (or starts after it because nothing
    /// holds it). Kafka answers a fetch from inside a batch with that whole batch; a broker
    /// that answers with the next batch instead (tansu 0.6) would make a reader skip the rest
    /// of it, so when the first batch starts after `from` the fetch is sent again from
    /// further back (1, 2, 4, … offsets) until its first batch does not. On Kafka that happens
    /// only in a gap compaction left, and one step back finds the batch before the gap.
    async fn fetch_covering(&self, partition: u32, from: u64) -> Result<Fetch, SourceError> {
        let fetch_from = |offset: u64| {
            within(&self.cluster, "read", self.config.timeout, move || {
                fetch(
                    &self.cluster,
                    &self.config.topic,
                    partition,
                    offset,
                    Duration::ZERO,
                    self.config.max_bytes,
                )
            })
        };
        let first = fetch_from(from).await?;
        let starts_after = |found: &Fetch| match found {
            Fetch::Found(fetched) => batches::first_base(fetched)
                .is_some_and(|base| u64::try_from(base).is_ok_and(|base| base > from)),
            Fetch::OutOfRange => false,
        };
        let mut step = 1u64;
        while starts_after(&first) && step <= from && step <= MAX_STEP_BACK {
            match fetch_from(from - step).await? {
                Fetch::OutOfRange => break, // back past the partition's start: nothing there
                found if starts_after(&found) => step *= 2,
                found => return Ok(found),
            }
        }
        Ok(first)
    }

    /// One fetch for a wait: whether something new (a record, a marker, a gap to carry
    /// `next` over) is there, after the broker held the fetch up to the wait's maximum.
    async fn fetch_for_wait(&self, partition: u32, from: u64) -> Result<bool, SourceError> {
        let limit = self.config.timeout + self.config.wait_max;
        let found = within(&self.cluster, "wait", limit, || {
            fetch(
                &self.cluster,
                &self.config.topic,
                partition,
                from,
                self.config.wait_max,
                self.config.max_bytes,
            )
        })
        .await?;
        match found {
            Fetch::OutOfRange => Ok(true),
            Fetch::Found(fetched) => Ok(batches::readable(&fetched, from)),
        }
    }
}

/// The topic's partition count against the count the source knows (`known`): fewer is a
/// topic deleted and created again, or another topic.
fn checked_count(config: &KafkaSourceConfig, topic: Topic, known: u32) -> Result<u32, SourceError> {
    let name = &config.topic;
    match topic {
        Topic::Missing => Err(setup(format!(
            "topic {name} does not exist on the cluster at {}: create it with {known} \
             partitions (`KafkaSource::create_topic`, or `kafka-topics.sh --create --topic \
             {name} --partitions {known}`); the source asks the broker not to create it on a read",
            config.bootstrap.join(",")
        ))),
        Topic::Partitions(count) if count < known => Err(setup(format!(
            "topic {name} has {count} partitions where {known} were expected: a Kafka topic's \
             partitions can be added, never removed, so this is not the topic the source \
             expects (a topic deleted and created again, or a wrong partition count in the \
             source's configuration: give it {count} if the checkpoints belong to this topic)"
        ))),
        Topic::Partitions(count) => Ok(count),
    }
}

#[async_trait]
impl Source for KafkaSource {
    fn partitions(&self) -> u32 {
        self.partitions.load(Ordering::Acquire)
    }

    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        SourceError::check_read(partition, self.partitions(), from, max)?;
        let (fetched_from, fetched) = match self.cache.covering(partition, from) {
            Some(kept) => (None, kept),
            None => match self.fetch_covering(partition, from).await? {
                Fetch::OutOfRange => return self.outside(partition, from).await,
                Fetch::Found(fetched) => (Some(from), fetched),
            },
        };
        let page =
            batches::page(fetched.clone(), from, max).map_err(|error| error.into_source("read"))?;
        if let Some(fetched_from) = fetched_from {
            self.cache.keep(partition, fetched_from, fetched, page.next);
        } else if page.entries.len() < max {
            // Read to its end: the next read fetches.
            self.cache.forget(partition);
        }
        Ok(page)
    }

    /// Asks the cluster how many partitions the topic has now (one metadata request) and
    /// returns it: more than before when the topic grew (then [`Source::partitions`] says so
    /// too), [`SourceError::Setup`] when the topic is gone or has fewer (it was deleted and
    /// created again: the checkpoints kept belong to the old one).
    async fn discover_partitions(&self) -> Result<u32, SourceError> {
        let topic = within(&self.cluster, "partitions", self.config.timeout, || {
            self.cluster.refresh()
        })
        .await?;
        let known = self.partitions.load(Ordering::Acquire);
        let count = checked_count(&self.config, topic, known)?;
        Ok(self
            .partitions
            .fetch_max(count, Ordering::AcqRel)
            .max(count))
    }

    async fn wait(&self, partition: u32, from: u64) -> Result<(), SourceError> {
        SourceError::check_partition(partition, self.partitions())?;
        SourceError::check_from(from)?;
        loop {
            let started = Instant::now();
            if self.fetch_for_wait(partition, from).await? {
                return Ok(());
            }
            // A broker that held the fetch answered after the wait's maximum; one that
            // answered much sooner with nothing does not hold fetches: pause instead.
            if started.elapsed() < self.config.wait_max / 2 {
                tokio::time::sleep(POLL_FLOOR.max(self.config.wait_max / 20)).await;
            }
        }
    }

    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        SourceError::check_partition(partition, self.partitions())?;
        let stable = within(&self.cluster, "head", self.config.timeout, || {
            offset(&self.cluster, &self.config.topic, partition, End::Stable)
        })
        .await?;
        Ok(last_before(stable))
    }

    /// One ListOffsets request per broker that leads some of the partitions asked (all of
    /// them, each once, in one request), the brokers one after the other, within the source's
    /// timeout and retried as a whole like `head` (a leader that moved is found again): each
    /// answer is what [`head`](Source::head) returns. Not atomic across partitions: each
    /// broker answers for its own partitions when its request arrives.
    async fn heads(&self, partitions: &[u32]) -> Result<Vec<Option<u64>>, SourceError> {
        let count = self.partitions();
        let asked: Vec<u32> = partitions
            .iter()
            .copied()
            .filter(|&partition| partition < count)
            .collect::<BTreeSet<u32>>()
            .into_iter()
            .collect();
        if asked.is_empty() {
            return Ok(vec![None; partitions.len()]);
        }
        let stable = within(&self.cluster, "head", self.config.timeout, || {
            offsets(&self.cluster, &self.config.topic, &asked, End::Stable)
        })
        .await?;
        Ok(partitions
            .iter()
            .map(|partition| stable.get(partition).copied().and_then(last_before))
            .collect())
    }
}

/// The offset before a partition's last stable offset `stable`: the last a read-committed
/// read can reach (`None` for an empty partition, or a negative answer).
fn last_before(stable: i64) -> Option<u64> {
    u64::try_from(stable)
        .ok()
        .and_then(|end| end.checked_sub(1))
}
