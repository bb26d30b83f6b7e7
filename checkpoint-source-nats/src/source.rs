//! [`NatsSource`]: the [`Source`] over a JetStream stream.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

use async_nats::jetstream::{self, stream::Stream};
use async_trait::async_trait;
use checkpoint_core::source::{Page, Source, SourceError};

use crate::config::NatsSourceConfig;
use crate::cursor::Cursor;
use crate::error::{Unexpected, backend, setup, within};
use crate::pool::{Lease, Pool};
use crate::setup::{check_stream, create_stream, is_stream_not_found};
use crate::subjects::partition_subject;

/// A [`Source`] over a JetStream stream: partition `p` is subject `<prefix>.<p>`, an entry's
/// position its stream sequence. See the [crate documentation](crate).
pub struct NatsSource {
    pub(crate) context: jetstream::Context,
    pub(crate) stream: Stream,
    pub(crate) config: NatsSourceConfig,
    /// The partition count as last known: the config's, raised to what the stream records
    /// (at setup, by `discover_partitions` and `grow_to`); never lowered.
    partitions: AtomicU32,
    pool: Pool,
}

impl fmt::Debug for NatsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NatsSource")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl NatsSource {
    /// The source over `stream` with `partitions` partitions on subjects
    /// `<stream>.<partition>`, after checking the stream (see [`new_with_config`](Self::new_with_config)).
    pub async fn new(
        context: jetstream::Context,
        stream: &str,
        partitions: u32,
    ) -> Result<Self, SourceError> {
        Self::new_with_config(context, NatsSourceConfig::new(stream, partitions)?).await
    }

    /// The source `config` describes, after checking its stream: it exists, keeps what it
    /// stores (limits retention), captures every partition's subject and, when its
    /// description records a partition count (`checkpoint-partitions=N`), has this one.
    /// Anything else is [`SourceError::Setup`] naming what to do, and nothing is read.
    pub async fn new_with_config(
        context: jetstream::Context,
        config: NatsSourceConfig,
    ) -> Result<Self, SourceError> {
        let limit = config.timeout;
        within("setup", limit, async {
            let stream = match context.get_stream(&config.stream).await {
                Ok(stream) => stream,
                Err(error) if is_stream_not_found(&error) => {
                    return Err(setup(format!(
                        "stream {:?} does not exist: create it with NatsSource::create_stream \
                         (or `nats stream add {} --subjects '{}.*'`)",
                        config.stream, config.stream, config.subject_prefix
                    )));
                }
                Err(error) => return Err(backend("setup", true, error)),
            };
            let partitions = check_stream(&stream.cached_info().config, &config)?;
            Ok(Self {
                partitions: AtomicU32::new(partitions),
                pool: Pool::default(),
                context,
                stream,
                config,
            })
        })
        .await
    }

    /// Connects to `urls` (one server URL, or a cluster's servers separated by commas: see
    /// [`server_addrs`](crate::server_addrs)) and opens the source of `config`
    /// ([`new_with_config`](Self::new_with_config)).
    pub async fn connect(urls: &str, config: NatsSourceConfig) -> Result<Self, SourceError> {
        let servers = crate::server_addrs(urls)?;
        let client = within("connect", config.timeout, async {
            async_nats::connect(servers)
                .await
                .map_err(|e| backend("connect", true, e))
        })
        .await?;
        Self::new_with_config(jetstream::new(client), config).await
    }

    /// Creates the stream `config` describes (file storage, subjects `<prefix>.*`, the
    /// partition count in its description), or checks the existing one as
    /// [`new_with_config`](Self::new_with_config) does.
    pub async fn create_stream(
        context: &jetstream::Context,
        config: &NatsSourceConfig,
    ) -> Result<(), SourceError> {
        within("setup", config.timeout, create_stream(context, config)).await
    }

    /// The partition count as last known (what `Source::partitions` returns).
    pub(crate) fn partitions_now(&self) -> u32 {
        self.partitions.load(Ordering::Acquire)
    }

    /// Raises the partition count known to `count` (never lowers it).
    pub(crate) fn raise_partitions(&self, count: u32) {
        self.partitions.fetch_max(count, Ordering::AcqRel);
    }

    /// What the source reads. Its [`partitions`](NatsSourceConfig::partitions) is the count
    /// the source was opened with; `Source::partitions` is the count now, which grows with
    /// the stream.
    pub fn config(&self) -> &NatsSourceConfig {
        &self.config
    }

    /// The JetStream context the source reads and appends through.
    pub fn context(&self) -> &jetstream::Context {
        &self.context
    }

    pub(crate) fn subject(&self, partition: u32) -> String {
        partition_subject(&self.config.subject_prefix, partition)
    }

    /// One read with a cursor at `from` (an idle one unless `fresh`). `Err((error, reused))`.
    async fn read_once(
        &self,
        partition: u32,
        from: u64,
        max: usize,
        fresh: bool,
    ) -> Result<Page, (SourceError, bool)> {
        let subject = self.subject(partition);
        let (mut lease, reused) = self
            .pool
            .checkout(&self.stream, partition, subject, from, fresh)
            .await
            .map_err(|e| (e, false))?;
        let cursor = lease_cursor(&mut lease).map_err(|e| (e, reused))?;
        // A second pull only when the stream has a message the first one did not bring (it
        // was stored in between).
        for _ in 0..2 {
            let (entries, error) = cursor.take(max, self.config.answer_timeout()).await;
            if let Some(last) = entries.last() {
                let next = last.position + 1;
                if error.is_none() {
                    lease.keep();
                }
                // After a broken delivery the entries before it are still good; the lease
                // drops the cursor.
                return Ok(Page { entries, next });
            }
            if let Some(error) = error {
                return Err((error, reused));
            }
            let after = self.next_after_nothing(partition, from);
            if let Some(next) = after.await.map_err(|e| (e, false))? {
                cursor.skip_to(next);
                lease.keep();
                return Ok(Page {
                    entries: Vec::new(),
                    next,
                });
            }
        }
        lease.keep();
        Ok(Page {
            entries: Vec::new(),
            next: from,
        })
    }

    /// Where a read that found nothing at or after `from` may go on: past the stream's last
    /// sequence, read before asking the stream (not the consumer) whether the subject has a
    /// message at or after `from`. Every sequence up to it was assigned, in order, when the
    /// stream answered: none of them can still become a message of the subject. `None` when
    /// the stream has such a message (stored since the pull).
    async fn next_after_nothing(
        &self,
        partition: u32,
        from: u64,
    ) -> Result<Option<u64>, SourceError> {
        let info = self
            .stream
            .get_info()
            .await
            .map_err(|e| backend("read", true, e))?;
        let last = info.state.last_sequence;
        match self
            .stream
            .raw_message_builder()
            .sequence(from.max(1))
            .next_by_subject(self.subject(partition))
            .send()
            .await
        {
            Ok(_) => Ok(None),
            Err(error)
                if matches!(
                    error.kind(),
                    jetstream::stream::RawMessageErrorKind::NoMessageFound
                ) =>
            {
                Ok(Some(from.max(last.saturating_add(1))))
            }
            Err(error) => Err(backend("read", true, error)),
        }
    }

    /// Waits on a cursor at `from` until the consumer delivers a message (buffered for the
    /// next read), the pull expiring and being sent again in between.
    async fn wait_once(
        &self,
        partition: u32,
        from: u64,
        fresh: bool,
    ) -> Result<(), (SourceError, bool)> {
        let subject = self.subject(partition);
        let (mut lease, reused) = self
            .pool
            .checkout(&self.stream, partition, subject, from, fresh)
            .await
            .map_err(|e| (e, false))?;
        let cursor = lease_cursor(&mut lease).map_err(|e| (e, reused))?;
        if !cursor.has_buffered() {
            while !cursor
                .pull_one(self.config.wait_expiry, self.config.wait_expiry / 2)
                .await
                .map_err(|e| (e, reused))?
            {}
        }
        lease.keep();
        Ok(())
    }
}

fn lease_cursor<'l>(lease: &'l mut Lease<'_>) -> Result<&'l mut Cursor, SourceError> {
    lease
        .cursor()
        .ok_or_else(|| backend("read", false, Unexpected("a kept cursor was used".into())))
}

impl Drop for NatsSource {
    fn drop(&mut self) {
        self.pool.discard_all();
    }
}

#[async_trait]
impl Source for NatsSource {
    fn partitions(&self) -> u32 {
        self.partitions_now()
    }

    /// One stream info request: the count the stream's description records (see
    /// [`NatsSource::grow_to`]); a stream that records none keeps the count given.
    async fn discover_partitions(&self) -> Result<u32, SourceError> {
        self.refresh_partitions().await
    }

    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        SourceError::check_read(partition, self.partitions_now(), from, max)?;
        within("read", self.config.timeout, async {
            match self.read_once(partition, from, max, false).await {
                Ok(page) => Ok(page),
                // An idle consumer may be gone (the server restarted, or deleted it after
                // its inactive threshold): try once more with a new one.
                Err((_, true)) => self
                    .read_once(partition, from, max, true)
                    .await
                    .map_err(|(error, _)| error),
                Err((error, false)) => Err(error),
            }
        })
        .await
    }

    async fn wait(&self, partition: u32, from: u64) -> Result<(), SourceError> {
        SourceError::check_partition(partition, self.partitions_now())?;
        SourceError::check_from(from)?;
        match self.wait_once(partition, from, false).await {
            Ok(()) => Ok(()),
            // As in `read`: an idle consumer may be gone.
            Err((_, true)) => self
                .wait_once(partition, from, true)
                .await
                .map_err(|(error, _)| error),
            Err((error, false)) => Err(error),
        }
    }

    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        SourceError::check_partition(partition, self.partitions_now())?;
        within("head", self.config.timeout, async {
            match self
                .stream
                .get_last_raw_message_by_subject(&self.subject(partition))
                .await
            {
                Ok(message) => Ok(Some(message.sequence)),
                Err(error)
                    if matches!(
                        error.kind(),
                        jetstream::stream::LastRawMessageErrorKind::NoMessageFound
                    ) =>
                {
                    Ok(None)
                }
                Err(error) => Err(backend("head", true, error)),
            }
        })
        .await
    }
}
