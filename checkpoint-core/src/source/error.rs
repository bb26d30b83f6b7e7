//! The one error type of sources.

use std::time::Duration;

use crate::BoxError;

/// The highest `from` a read takes: the highest checkpoint any store keeps.
const MAX_FROM: u64 = i64::MAX as u64;

/// What can go wrong reading a source. Every variant says what to do; none is a panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// A partition the log does not have. Nothing was read.
    #[error("partition {partition} is out of range: the source has partitions 0..{partitions}")]
    PartitionOutOfRange {
        /// The partition asked for.
        partition: u32,
        /// How many the source has.
        partitions: u32,
    },

    /// An argument no source accepts (for example `max` = 0). Nothing was sent to the backend.
    #[error("invalid {argument}: {reason}")]
    InvalidInput {
        /// Which argument.
        argument: &'static str,
        /// Why, in words.
        reason: String,
    },

    /// The log is not set up as the source expects: a missing table or stream, a column of
    /// another type, a partition count that differs from the stored one. `message` names what
    /// was found and what to do; retrying cannot help.
    #[error("{backend} source is not set up: {message}")]
    Setup {
        /// Which backend, for example `"postgres"`.
        backend: &'static str,
        /// What is wrong and what to do about it.
        message: String,
    },

    /// The backend failed. `source` is the client library's own error.
    #[error("{backend} source {operation} failed{}", if *retryable { " (may succeed if retried)" } else { "" })]
    Backend {
        /// Which backend.
        backend: &'static str,
        /// What the source was doing: `"read"`, `"wait"`, `"head"`, `"append"`.
        operation: &'static str,
        /// Whether the same call may succeed later.
        retryable: bool,
        /// The backend's own error.
        #[source]
        source: BoxError,
    },

    /// The operation did not finish within the source's configured timeout. Reads change
    /// nothing, so retrying is safe.
    #[error("{backend} source {operation} timed out after {after:?}")]
    Timeout {
        /// Which backend.
        backend: &'static str,
        /// What the source was doing.
        operation: &'static str,
        /// The timeout that elapsed.
        after: Duration,
    },
}

impl SourceError {
    /// Whether retrying the same call may succeed: a retryable backend failure or a timeout.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Backend {
                retryable: true,
                ..
            } | Self::Timeout { .. }
        )
    }

    /// Checks `partition` against `partitions`, `from` against `i64::MAX` and `max` against 1,
    /// before any I/O: the input rules every source applies to a read.
    pub fn check_read(partition: u32, partitions: u32, from: u64, max: usize) -> Result<(), Self> {
        Self::check_partition(partition, partitions)?;
        Self::check_from(from)?;
        if max == 0 {
            return Err(Self::InvalidInput {
                argument: "max",
                reason: "a read returns at most `max` entries, so it must be at least 1".into(),
            });
        }
        Ok(())
    }

    /// Checks a read's `from` (a checkpoint): at most `i64::MAX`, as every stored position.
    pub fn check_from(from: u64) -> Result<(), Self> {
        if from > MAX_FROM {
            return Err(Self::InvalidInput {
                argument: "from",
                reason: format!("{from} is above the highest checkpoint, {MAX_FROM}"),
            });
        }
        Ok(())
    }

    /// Checks an entry's position: at most `i64::MAX - 1`, so the checkpoint after it is still
    /// a valid position.
    pub fn check_position(position: u64) -> Result<(), Self> {
        if position >= MAX_FROM {
            return Err(Self::InvalidInput {
                argument: "position",
                reason: format!(
                    "{position} is above the highest entry position, {}",
                    MAX_FROM - 1
                ),
            });
        }
        Ok(())
    }

    /// Checks `partition` against `partitions`, before any I/O.
    pub fn check_partition(partition: u32, partitions: u32) -> Result<(), Self> {
        if partition >= partitions {
            return Err(Self::PartitionOutOfRange {
                partition,
                partitions,
            });
        }
        Ok(())
    }
}
