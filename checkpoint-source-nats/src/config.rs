//! What a [`NatsSource`](crate::NatsSource) reads: the stream, its subjects, its partitions.

use std::time::Duration;

use async_nats::ServerAddr;
use checkpoint_core::source::SourceError;

use crate::subjects::{check_prefix, check_stream_name};

/// The default bound of one read, head or append: [`NatsSourceConfig::with_timeout`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The default longest pull of a wait: [`NatsSourceConfig::with_wait_expiry`].
pub const DEFAULT_WAIT_EXPIRY: Duration = Duration::from_secs(10);

/// The stream, subject prefix and partition count of a source, and its timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsSourceConfig {
    pub(crate) stream: String,
    pub(crate) subject_prefix: String,
    pub(crate) partitions: u32,
    pub(crate) timeout: Duration,
    pub(crate) wait_expiry: Duration,
}

impl NatsSourceConfig {
    /// A source over `stream` with `partitions` partitions, whose subjects are
    /// `<stream>.<partition>` (see [`with_subject_prefix`](Self::with_subject_prefix)).
    ///
    /// Fails with [`SourceError::InvalidInput`] for a name the server would refuse or no
    /// partition.
    pub fn new(stream: impl Into<String>, partitions: u32) -> Result<Self, SourceError> {
        let stream = stream.into();
        check_stream_name(&stream)?;
        if partitions == 0 {
            return Err(SourceError::InvalidInput {
                argument: "partitions",
                reason: "a source has at least one partition".into(),
            });
        }
        Ok(Self {
            subject_prefix: stream.clone(),
            stream,
            partitions,
            timeout: DEFAULT_TIMEOUT,
            wait_expiry: DEFAULT_WAIT_EXPIRY,
        })
    }

    /// Subjects `<prefix>.<partition>` instead of `<stream>.<partition>`: `"app.orders"` gives
    /// `app.orders.0`, `app.orders.1`, …
    pub fn with_subject_prefix(mut self, prefix: impl Into<String>) -> Result<Self, SourceError> {
        let prefix = prefix.into();
        check_prefix(&prefix)?;
        self.subject_prefix = prefix;
        Ok(self)
    }

    /// Bounds each read, head and append (and the setup check) by `timeout` instead of
    /// [`DEFAULT_TIMEOUT`]; it fails with [`SourceError::Timeout`] when it elapses.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long one pull of [`wait`](checkpoint_core::source::Source::wait) stays on the
    /// server before it is sent again ([`DEFAULT_WAIT_EXPIRY`]). A wait goes on until a
    /// message arrives; this only bounds how long the server keeps one request.
    pub fn with_wait_expiry(mut self, expiry: Duration) -> Self {
        self.wait_expiry = expiry.max(Duration::from_millis(100));
        self
    }

    /// How long a pull may go unanswered before its consumer is taken as gone (a server
    /// restart, the inactive threshold) and replaced: a quarter of the timeout, so that the
    /// replacement still fits in it.
    pub(crate) fn answer_timeout(&self) -> Duration {
        (self.timeout / 4).max(Duration::from_millis(50))
    }

    /// The stream's name.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// The subject prefix: partition `p` is subject `<prefix>.<p>`.
    pub fn subject_prefix(&self) -> &str {
        &self.subject_prefix
    }

    /// How many partitions.
    pub fn partitions(&self) -> u32 {
        self.partitions
    }
}

/// The servers of `urls`: one URL, or several separated by commas (`nats://a:4222,nats://b:4222`,
/// the form the `nats` tools take), each a server of one cluster. The client connects to the
/// first that answers and, when it loses that one, reconnects to another of the list or of
/// those the cluster announced; a list lets a source start while some servers are down.
///
/// Fails with [`SourceError::InvalidInput`] for an empty list or a URL the client cannot parse.
pub fn server_addrs(urls: &str) -> Result<Vec<ServerAddr>, SourceError> {
    let invalid = |reason: String| SourceError::InvalidInput {
        argument: "url",
        reason,
    };
    let servers = urls
        .split(',')
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(|url| {
            url.parse::<ServerAddr>()
                .map_err(|e| invalid(format!("{url:?} is not a NATS server URL: {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if servers.is_empty() {
        return Err(invalid("no server URL given".into()));
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_urls_is_every_server_in_order() {
        let servers = server_addrs("nats://127.0.0.1:4231, nats://127.0.0.1:4232,").unwrap();
        let ports: Vec<u16> = servers.iter().map(ServerAddr::port).collect();
        assert_eq!(ports, [4231, 4232]);
        assert_eq!(server_addrs("nats://127.0.0.1:4222").unwrap().len(), 1);
    }

    #[test]
    fn an_empty_list_or_a_bad_url_is_invalid_input() {
        for urls in ["", " , ", "nats://127.0.0.1:4231,nats://[::1"] {
            assert!(
                matches!(server_addrs(urls), Err(SourceError::InvalidInput { .. })),
                "{urls:?} accepted"
            );
        }
    }
}
