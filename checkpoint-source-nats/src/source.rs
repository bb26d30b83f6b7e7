//! [`NatsSource`]: the [`Source`] over a JetStream stream.

use std::fmt;

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
            check_stream(&stream.cached_info().config, &config)?;
            Ok(Self {
                pool: Pool::new(config.partitions),
                context,
                stream,
                config,
            })
        })
        .await
    }

    /// Connects to `url` and opens the source of `config` ([`new_with_config`](Self::new_with_config)).
    pub async fn connect(url: &str, config: NatsSourceConfig) -> Result<Self, SourceError> {
        let client = within("connect", config.timeout, async {
            async_nats::connect(url)
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

    /// What the source reads.
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
        let (mut lease, reused) = self
            .pool
            .checkout(
                &self.stream,
                partition,
                self.subject(partition),
                from,
                fresh,
            )
            .await
            .map_err(|e| (e, false))?;
        let cursor = lease_cursor(&mut lease).map_err(|e| (e, reused))?;
        let (entries, error) = cursor.take(max).await;
        if let Some(error) = error {
            // The entries before a broken delivery are good; the lease drops the cursor.
            return match entries.last() {
                Some(last) => Ok(Page {
                    next: last.position + 1,
                    entries,
                }),
                None => Err((error, reused)),
            };
        }
        let next = match entries.last() {
            Some(last) => last.position + 1,
            None => {
                let next = self
                    .next_after_nothing(partition, from)
                    .await
                    .map_err(|e| (e, false))?;
                cursor.skip_to(next);
                next
            }
        };
        lease.keep();
        Ok(Page { entries, next })
    }

    /// Where a read that found nothing at or after `from` may go on: past the stream's last
    /// sequence, read before asking the stream (not the consumer) whether the subject has a
    /// message at or after `from`. Every sequence up to it was assigned, in order, when the
    /// stream answered: none of them can still become a message of the subject.
    async fn next_after_nothing(&self, partition: u32, from: u64) -> Result<u64, SourceError> {
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
            // Stored since the pull: the consumer delivers it on the next read.
            Ok(_) => Ok(from),
            Err(error)
                if matches!(
                    error.kind(),
                    jetstream::stream::RawMessageErrorKind::NoMessageFound
                ) =>
            {
                Ok(from.max(last.saturating_add(1)))
            }
            Err(error) => Err(backend("read", true, error)),
        }
    }

    /// Waits on a cursor at `from` until the consumer delivers a message (buffered for the
    /// next read), the pull expiring and being sent again in between.
    async fn wait_once(&self, partition: u32, from: u64) -> Result<(), SourceError> {
        let (mut lease, _) = self
            .pool
            .checkout(
                &self.stream,
                partition,
                self.subject(partition),
                from,
                false,
            )
            .await?;
        let cursor = lease_cursor(&mut lease)?;
        if !cursor.has_buffered() {
            while !cursor.pull_one(self.config.wait_expiry).await? {}
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
        self.config.partitions
    }

    async fn read(&self, partition: u32, from: u64, max: usize) -> Result<Page, SourceError> {
        SourceError::check_read(partition, self.config.partitions, from, max)?;
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
        SourceError::check_partition(partition, self.config.partitions)?;
        SourceError::check_from(from)?;
        self.wait_once(partition, from).await
    }

    async fn head(&self, partition: u32) -> Result<Option<u64>, SourceError> {
        SourceError::check_partition(partition, self.config.partitions)?;
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
