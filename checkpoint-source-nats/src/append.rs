//! Appending through the source: publish with the stream's acknowledgement.

use async_nats::HeaderMap;
use checkpoint_core::source::SourceError;

use crate::KEY_HEADER;
use crate::error::{backend, setup, within};
use crate::source::NatsSource;

impl NatsSource {
    /// Publishes `payload` to `partition`'s subject, with `key` in the `Checkpoint-Key`
    /// header, and returns its position once the stream acknowledged it (stored it). A key
    /// with a control character (a line break) is refused: a header cannot hold it.
    ///
    /// An error means the message may or may not be stored (the acknowledgement may be what
    /// was lost): publishing again may store it twice. An acknowledgement from another stream
    /// (one that captures the subject before this one) is [`SourceError::Setup`].
    pub async fn append(
        &self,
        partition: u32,
        key: Option<&str>,
        payload: impl Into<Vec<u8>>,
    ) -> Result<u64, SourceError> {
        SourceError::check_partition(partition, self.partitions_now())?;
        if let Some(key) = key.filter(|key| key.chars().any(char::is_control)) {
            // A header value ends at a line break: a key with one would forge headers.
            return Err(SourceError::InvalidInput {
                argument: "key",
                reason: format!("{key:?} has a control character, which a NATS header cannot hold"),
            });
        }
        let payload: Vec<u8> = payload.into();
        let mut headers = HeaderMap::new();
        if let Some(key) = key {
            headers.insert(KEY_HEADER, key);
        }
        let subject = self.subject(partition);
        let ack = within("append", self.config.timeout, async {
            self.context
                .publish_with_headers(subject, headers, payload.into())
                .await
                .map_err(|e| backend("append", true, e))?
                .await
                .map_err(|e| backend("append", true, e))
        })
        .await?;
        if ack.stream != self.config.stream {
            return Err(setup(format!(
                "subject {:?} is stored by stream {:?}, not {:?}: remove it from that stream's \
                 subjects",
                self.subject(partition),
                ack.stream,
                self.config.stream
            )));
        }
        Ok(ack.sequence)
    }
}
