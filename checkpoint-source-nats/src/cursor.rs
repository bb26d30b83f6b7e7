//! A partition reader's position on the server: an ephemeral pull consumer filtered to the
//! partition's subject, kept between reads so that a reader going on from where it stopped
//! sends one pull request per read, not a consumer creation.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::consumer::{AckPolicy, DeliverPolicy, PullConsumer, pull};
use async_nats::jetstream::{self, stream::Stream};
use checkpoint_core::source::{Entry, SourceError};
use futures_util::StreamExt;

use crate::KEY_HEADER;
use crate::error::{Unexpected, backend, boxed};

/// How long the server keeps a consumer nobody pulls from: the consumer of a reader that
/// stopped without deleting it (a crashed process) goes away on its own.
const INACTIVE_THRESHOLD: Duration = Duration::from_secs(120);

/// The most messages one read pulls: the server takes the batch as a signed 32-bit count,
/// and a page this long is already far past the point where larger pages read faster.
const MAX_PULL: usize = 10_000;

/// An ephemeral pull consumer of one partition and where it stands.
///
/// Invariant: the consumer next delivers the first message of the subject at or after
/// `next` (no message of the subject lies between what it delivered and `next`), and
/// `buffered` holds, in order, messages it delivered at or after `next` that no read
/// returned yet.
pub(crate) struct Cursor {
    consumer: PullConsumer,
    stream: Stream,
    name: String,
    /// Where a read that goes on with this cursor starts.
    pub(crate) next: u64,
    /// The consumer sequence of the last delivery: deliveries count up by one, so a jump
    /// means a message was delivered that this cursor never saw.
    delivered: u64,
    /// The lowest stream sequence the next delivery may have.
    floor: u64,
    buffered: VecDeque<Entry>,
}

impl Cursor {
    /// A new consumer of `subject` delivering from sequence `from` on (sequences start at 1).
    pub(crate) async fn open(
        stream: &Stream,
        subject: String,
        from: u64,
    ) -> Result<Self, SourceError> {
        let deliver_policy = if from <= 1 {
            DeliverPolicy::All
        } else {
            DeliverPolicy::ByStartSequence {
                start_sequence: from,
            }
        };
        let consumer: PullConsumer = stream
            .create_consumer(pull::Config {
                filter_subject: subject,
                deliver_policy,
                // Nothing to acknowledge: the reader's checkpoint is its acknowledgement, and
                // without acks the consumer never redelivers or holds messages back.
                ack_policy: AckPolicy::None,
                inactive_threshold: INACTIVE_THRESHOLD,
                memory_storage: true,
                ..Default::default()
            })
            .await
            .map_err(|e| backend("read", true, e))?;
        let name = consumer.cached_info().name.clone();
        Ok(Self {
            consumer,
            stream: stream.clone(),
            name,
            next: from,
            delivered: 0,
            floor: from,
            buffered: VecDeque::new(),
        })
    }

    /// Whether a message it delivered waits in the buffer.
    pub(crate) fn has_buffered(&self) -> bool {
        !self.buffered.is_empty()
    }

    /// Up to `max` entries at or after `next`: the buffered ones, then what the server has
    /// now (a pull that does not wait). Returns the entries and, when a delivery went wrong,
    /// the error: the entries before it are good, the cursor is not.
    ///
    /// A consumer that went away (a server restart, the inactive threshold) does not answer
    /// a pull at all: no answer within `answer` is an error, as a broken delivery is.
    pub(crate) async fn take(
        &mut self,
        max: usize,
        answer: Duration,
    ) -> (Vec<Entry>, Option<SourceError>) {
        let mut entries: Vec<Entry> = Vec::with_capacity(max.min(1024));
        while entries.len() < max {
            match self.buffered.pop_front() {
                Some(entry) => entries.push(entry),
                None => break,
            }
        }
        if entries.len() < max {
            // A page may be shorter than `max`: one pull asks for at most `MAX_PULL`.
            let wanted = (max - entries.len()).min(MAX_PULL);
            let error = match self.consumer.fetch().max_messages(wanted).messages().await {
                Ok(batch) => self.receive(batch, &mut entries, Some(answer)).await.err(),
                Err(e) => Some(backend("read", true, e)),
            };
            if error.is_some() {
                return (entries, error);
            }
        }
        if let Some(last) = entries.last() {
            self.next = last.position + 1;
        }
        (entries, None)
    }

    /// Waits up to `expiry` for the next message and buffers it. `Ok(true)` when one came.
    ///
    /// A consumer that went away leaves the pull unanswered: every `check_every` the server is
    /// asked whether the consumer still exists, and an error ends the wait.
    pub(crate) async fn pull_one(
        &mut self,
        expiry: Duration,
        check_every: Duration,
    ) -> Result<bool, SourceError> {
        let batch = self
            .consumer
            .batch()
            .max_messages(1)
            .expires(expiry)
            .messages()
            .await
            .map_err(|e| backend("wait", true, e))?;
        let (stream, name) = (self.stream.clone(), self.name.clone());
        let alive = async move {
            loop {
                tokio::time::sleep(check_every).await;
                if let Err(error) = stream.consumer_info(&name).await {
                    return backend("wait", true, error);
                }
            }
        };
        let mut entries = Vec::with_capacity(1);
        tokio::select! {
            received = self.receive(batch, &mut entries, None) => received?,
            gone = alive => return Err(gone),
        }
        let came = !entries.is_empty();
        self.buffered.extend(entries);
        Ok(came)
    }

    /// Moves the cursor over a gap its caller knows holds no message of the subject.
    pub(crate) fn skip_to(&mut self, next: u64) {
        if self.buffered.is_empty() && next > self.next {
            self.next = next;
        }
    }

    /// Appends the deliveries of `batch` to `entries`, checking that none went missing.
    /// With `answer`, each answer (a message or the end) must come within it.
    async fn receive(
        &mut self,
        mut batch: pull::Batch,
        entries: &mut Vec<Entry>,
        answer: Option<Duration>,
    ) -> Result<(), SourceError> {
        loop {
            let next = match answer {
                Some(limit) => tokio::time::timeout(limit, batch.next())
                    .await
                    .map_err(|_| self.silent(limit))?,
                None => batch.next().await,
            };
            let Some(message) = next else { break };
            let message = message.map_err(|e| boxed("read", true, e))?;
            let entry = self.accept(&message)?;
            entries.push(entry);
        }
        Ok(())
    }

    /// The error of a consumer that did not answer a pull.
    fn silent(&self, limit: Duration) -> SourceError {
        backend(
            "read",
            true,
            Unexpected(format!(
                "consumer {} did not answer a pull within {limit:?} (deleted or the server \
                 restarted): reopening it",
                self.name
            )),
        )
    }

    /// One delivery as an entry, after checking it follows the previous one.
    fn accept(&mut self, message: &jetstream::Message) -> Result<Entry, SourceError> {
        let info = message.info().map_err(|e| boxed("read", false, e))?;
        let floor = self.floor;
        if info.consumer_sequence != self.delivered + 1 || info.stream_sequence < floor {
            // A delivery this cursor never received (a pull abandoned mid-way) or one out of
            // order: what came before is good, nothing after it can be trusted.
            return Err(backend(
                "read",
                true,
                Unexpected(format!(
                    "consumer {} delivered #{} (sequence {}) after #{}, from {}: reopening it",
                    self.name, info.consumer_sequence, info.stream_sequence, self.delivered, floor
                )),
            ));
        }
        self.delivered = info.consumer_sequence;
        self.floor = info.stream_sequence + 1;
        SourceError::check_position(info.stream_sequence)?;
        let appended_at = u64::try_from(info.published.unix_timestamp_nanos())
            .ok()
            .map(|nanos| UNIX_EPOCH + Duration::from_nanos(nanos));
        Ok(entry(message, info.stream_sequence, appended_at))
    }

    /// Deletes the consumer in the background (the server would after
    /// [`INACTIVE_THRESHOLD`] anyway); needs a tokio runtime, and does nothing without one.
    pub(crate) fn discard(self) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                // A failure leaves the consumer to the inactive threshold: nothing to do.
                let _ = self.stream.delete_consumer(&self.name).await;
            });
        }
    }
}

/// The entry of a stored message.
fn entry(message: &jetstream::Message, position: u64, appended_at: Option<SystemTime>) -> Entry {
    let key = message
        .headers
        .as_ref()
        .and_then(|headers| headers.get(KEY_HEADER))
        .map(|value| value.as_str().to_owned());
    Entry {
        position,
        key,
        payload: message.payload.to_vec(),
        appended_at,
    }
}
