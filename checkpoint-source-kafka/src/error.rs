//! The errors of the wire (a broker that cannot be reached, a response that cannot be decoded,
//! an error code) and how each becomes a [`SourceError`].

use std::fmt;
use std::time::Duration;

use checkpoint_core::source::SourceError;
use kafka_protocol::ResponseError;

/// The backend name every error of this crate carries.
pub(crate) const BACKEND: &str = "kafka";

/// What went wrong talking to a broker.
#[derive(Debug)]
pub(crate) enum WireError {
    /// The connection failed or closed: the broker restarted, the network broke. A new
    /// connection may succeed.
    Io(std::io::Error),
    /// The connection failed after a request that writes was sent: it may have been applied,
    /// so it is not sent again on the caller's behalf (a new attempt may write it twice).
    MaybeApplied(std::io::Error),
    /// A message could not be encoded or decoded (the codec's own error).
    Codec(Box<dyn std::error::Error + Send + Sync>),
    /// The broker answered something the protocol does not allow: another correlation id, a
    /// frame too large, an API version range without one this crate speaks.
    Protocol(String),
    /// The broker answered with an error code.
    Server {
        /// What was asked, for the message.
        what: String,
        /// The code.
        error: ResponseError,
    },
}

impl WireError {
    /// Whether a new attempt (after a metadata refresh, on a new connection) may succeed.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            Self::Io(_) => true,
            Self::MaybeApplied(_) | Self::Codec(_) | Self::Protocol(_) => false,
            Self::Server { error, .. } => error.is_retriable() || is_leadership(*error),
        }
    }

    /// Whether the partition's leader may have moved: the metadata is to be read again.
    pub(crate) fn moves_leader(&self) -> bool {
        match self {
            Self::Io(_) => true,
            Self::Server { error, .. } => is_leadership(*error),
            Self::MaybeApplied(_) | Self::Codec(_) | Self::Protocol(_) => false,
        }
    }

    /// This error as the source's, for `operation`.
    pub(crate) fn into_source(self, operation: &'static str) -> SourceError {
        // A write that may have been applied may also be tried again: the caller decides,
        // knowing it may then be written twice.
        let retryable = self.is_transient() || matches!(self, Self::MaybeApplied(_));
        SourceError::Backend {
            backend: BACKEND,
            operation,
            retryable,
            source: Box::new(self),
        }
    }
}

/// Error codes that say the request went to a broker that does not lead the partition (now).
fn is_leadership(error: ResponseError) -> bool {
    matches!(
        error,
        ResponseError::NotLeaderOrFollower
            | ResponseError::LeaderNotAvailable
            | ResponseError::UnknownTopicOrPartition
            | ResponseError::FencedLeaderEpoch
            | ResponseError::UnknownLeaderEpoch
            | ResponseError::ReplicaNotAvailable
            | ResponseError::NotCoordinator
            | ResponseError::KafkaStorageError
    )
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(error) => write!(f, "connection to the broker failed: {error}"),
            Self::MaybeApplied(error) => write!(
                f,
                "connection to the broker failed after the request was sent (it may have been \
                 applied): {error}"
            ),
            Self::Codec(error) => write!(
                f,
                "a Kafka message could not be encoded or decoded: {error}"
            ),
            Self::Protocol(message) => f.write_str(message),
            Self::Server { what, error } => {
                write!(
                    f,
                    "the broker refused {what}: {error} (code {})",
                    error.code()
                )
            }
        }
    }
}

impl std::error::Error for WireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(error) | Self::MaybeApplied(error) => Some(error),
            Self::Codec(error) => Some(error.as_ref()),
            Self::Protocol(_) | Self::Server { .. } => None,
        }
    }
}

impl From<std::io::Error> for WireError {
    fn from(error: std::io::Error) -> Self {
        Self::Io(error)
    }
}

/// The codec's errors (`anyhow::Error`, which this crate does not name).
pub(crate) fn codec(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> WireError {
    WireError::Codec(error.into())
}

/// A code of a response as an error, `None` for 0.
pub(crate) fn server(what: impl fmt::Display, code: i16) -> Result<(), WireError> {
    match ResponseError::try_from_code(code) {
        None => Ok(()),
        Some(error) => Err(WireError::Server {
            what: what.to_string(),
            error,
        }),
    }
}

/// A setup problem: what was found and what to do about it.
pub(crate) fn setup(message: impl Into<String>) -> SourceError {
    SourceError::Setup {
        backend: BACKEND,
        message: message.into(),
    }
}

/// The call ran out of its time.
pub(crate) fn timeout(operation: &'static str, after: Duration) -> SourceError {
    SourceError::Timeout {
        backend: BACKEND,
        operation,
        after,
    }
}
