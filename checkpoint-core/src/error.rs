//! The one error type of the workspace.
//!
//! Every backend returns [`Error`]. Its variants tell apart what a caller handles differently:
//! input that can never succeed ([`Error::InvalidInput`]), a failure of the backend that may go
//! away ([`Error::Backend`], [`Error::Timeout`]), and the two refusals of the exclusive mode
//! ([`Error::QueryChanged`], [`Error::Moved`]). A backend's own error is kept as the `source`,
//! never flattened into a string.

use std::fmt;
use std::time::Duration;

use crate::Fingerprint;

/// A boxed error from a backend's client library.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a store was doing when it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// [`CheckpointStore::list`](crate::CheckpointStore::list).
    List,
    /// [`CheckpointStore::load`](crate::CheckpointStore::load).
    Load,
    /// [`CheckpointStore::save`](crate::CheckpointStore::save).
    Save,
    /// [`CheckpointStore::save_all`](crate::CheckpointStore::save_all).
    SaveAll,
    /// Claiming an exclusive checkpoint.
    Claim,
    /// Advancing an exclusive checkpoint.
    Advance,
    /// Connecting to the backend.
    Connect,
    /// Creating or checking the backend's schema, table or scripts.
    Migrate,
    /// [`CheckpointAdmin::groups`](crate::CheckpointAdmin::groups).
    Groups,
    /// [`CheckpointAdmin::start_at`](crate::CheckpointAdmin::start_at).
    StartAt,
    /// [`CheckpointAdmin::retire`](crate::CheckpointAdmin::retire).
    Retire,
    /// [`CheckpointAdmin::retired`](crate::CheckpointAdmin::retired).
    Retired,
    /// [`CheckpointAdmin::purge`](crate::CheckpointAdmin::purge).
    Purge,
    /// [`LeaseStore::acquire`](crate::LeaseStore::acquire).
    Acquire,
    /// [`LeaseStore::renew`](crate::LeaseStore::renew).
    Renew,
    /// [`LeaseStore::release`](crate::LeaseStore::release).
    Release,
    /// [`LeaseStore::leave`](crate::LeaseStore::leave).
    Leave,
    /// [`LeaseStore::leases`](crate::LeaseStore::leases).
    Leases,
    /// [`LeaseStore::request_handover`](crate::LeaseStore::request_handover).
    RequestHandover,
    /// [`ParkedStore::park`](crate::parked::ParkedStore::park).
    Park,
    /// [`ParkedStore::parked`](crate::parked::ParkedStore::parked).
    Parked,
    /// [`ParkedStore::retry_parked`](crate::parked::ParkedStore::retry_parked).
    RetryParked,
    /// [`ParkedStore::unpark`](crate::parked::ParkedStore::unpark).
    Unpark,
    /// Beginning a transaction
    /// ([`TransactionalStore::begin_transaction`](crate::transactional::TransactionalStore::begin_transaction)).
    Begin,
    /// Committing a transaction
    /// ([`TransactionalStore::commit_transaction`](crate::transactional::TransactionalStore::commit_transaction)).
    Commit,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::List => "list",
            Operation::Load => "load",
            Operation::Save => "save",
            Operation::SaveAll => "save_all",
            Operation::Claim => "claim",
            Operation::Advance => "advance",
            Operation::Connect => "connect",
            Operation::Migrate => "migrate",
            Operation::Groups => "groups",
            Operation::StartAt => "start_at",
            Operation::Retire => "retire",
            Operation::Retired => "retired",
            Operation::Purge => "purge",
            Operation::Acquire => "acquire",
            Operation::Renew => "renew",
            Operation::Release => "release",
            Operation::Leave => "leave",
            Operation::Leases => "leases",
            Operation::RequestHandover => "request_handover",
            Operation::Park => "park",
            Operation::Parked => "parked",
            Operation::RetryParked => "retry_parked",
            Operation::Unpark => "unpark",
            Operation::Begin => "begin",
            Operation::Commit => "commit",
        })
    }
}

/// Which argument of a call was invalid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Argument {
    /// The group name.
    Group,
    /// A subscription name.
    Subscription,
    /// A position to save.
    Position,
    /// The initial position of a claim.
    InitialPosition,
    /// The `from` position of an advance.
    From,
    /// The `to` position of an advance.
    To,
    /// A partition of [`start_at`](crate::CheckpointAdmin::start_at).
    Partition,
    /// The positions of [`start_at`](crate::CheckpointAdmin::start_at), as a whole.
    Positions,
    /// The owner of a lease: the worker id a caller chooses.
    Owner,
    /// The worker asking for a handover.
    Requester,
    /// The duration of a lease.
    Duration,
    /// The partitions of a lease operation, as a whole.
    Partitions,
    /// A setting of the store itself, such as a table name or a key prefix.
    Setting(&'static str),
    /// The error text of a [parked entry](crate::parked::ParkedEntry).
    ErrorText,
}

impl fmt::Display for Argument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Argument::Group => f.write_str("group"),
            Argument::Subscription => f.write_str("subscription"),
            Argument::Position => f.write_str("position"),
            Argument::InitialPosition => f.write_str("initial position"),
            Argument::From => f.write_str("from position"),
            Argument::To => f.write_str("to position"),
            Argument::Partition => f.write_str("partition"),
            Argument::Positions => f.write_str("positions"),
            Argument::Owner => f.write_str("owner"),
            Argument::Requester => f.write_str("requester"),
            Argument::Duration => f.write_str("lease duration"),
            Argument::Partitions => f.write_str("partitions"),
            Argument::Setting(name) => write!(f, "setting `{name}`"),
            Argument::ErrorText => f.write_str("error text"),
        }
    }
}

/// Why an argument was invalid.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InvalidReason {
    /// A name was empty.
    Empty,
    /// A name was longer than `max` bytes of UTF-8.
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The most a name may have.
        max: usize,
    },
    /// A name contained a NUL character.
    ContainsNul {
        /// Where the first NUL is, in bytes.
        byte_offset: usize,
    },
    /// A position was above the highest a store can keep.
    PositionOutOfRange {
        /// The position given.
        value: u64,
        /// The highest valid position ([`MAX_POSITION`](crate::validation::MAX_POSITION)).
        max: u64,
    },
    /// An advance whose `to` was not ahead of its `from`.
    NotAhead {
        /// The `from` given.
        from: u64,
        /// The `to` given.
        to: u64,
    },
    /// A store setting did not have the form it must have.
    Malformed {
        /// What form it must have.
        expected: &'static str,
    },
    /// A partition named twice where each may appear once.
    DuplicatePartition {
        /// The partition named twice.
        partition: u32,
    },
    /// A lease duration outside `min..=max`.
    DurationOutOfRange {
        /// The duration given.
        value: Duration,
        /// The shortest valid lease ([`MIN_LEASE_DURATION`](crate::lease::MIN_LEASE_DURATION)).
        min: Duration,
        /// The longest valid lease ([`MAX_LEASE_DURATION`](crate::lease::MAX_LEASE_DURATION)).
        max: Duration,
    },
    /// More entries than one call takes.
    TooMany {
        /// How many were given.
        len: usize,
        /// The most one call takes.
        max: usize,
    },
}

impl fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidReason::Empty => f.write_str("it is empty"),
            InvalidReason::TooLong { len, max } => {
                write!(f, "it is {len} bytes long, more than the {max} allowed")
            }
            InvalidReason::ContainsNul { byte_offset } => {
                write!(f, "it contains a NUL character at byte {byte_offset}")
            }
            InvalidReason::PositionOutOfRange { value, max } => {
                write!(f, "{value} is above the highest valid position {max}")
            }
            InvalidReason::NotAhead { from, to } => {
                write!(f, "{to} is not ahead of {from}")
            }
            InvalidReason::Malformed { expected } => write!(f, "expected {expected}"),
            InvalidReason::DuplicatePartition { partition } => {
                write!(f, "partition {partition} is given more than once")
            }
            InvalidReason::DurationOutOfRange { value, min, max } => {
                write!(f, "{value:?} is outside {min:?}..={max:?}")
            }
            InvalidReason::TooMany { len, max } => {
                write!(f, "{len} given, more than the {max} one call takes")
            }
        }
    }
}

/// An argument that no store accepts: which one, why, and where in a batch.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
#[error("invalid {argument}{}: {reason}", batch_index.map(|i| format!(" (batch entry {i})")).unwrap_or_default())]
pub struct InvalidInput {
    /// Which argument was invalid.
    pub argument: Argument,
    /// Why it was invalid.
    pub reason: InvalidReason,
    /// For [`save_all`](crate::CheckpointStore::save_all) and
    /// [`start_at`](crate::CheckpointAdmin::start_at), the index of the first invalid entry.
    pub batch_index: Option<usize>,
}

impl InvalidInput {
    /// An invalid `argument` outside any batch.
    pub fn new(argument: Argument, reason: InvalidReason) -> Self {
        Self {
            argument,
            reason,
            batch_index: None,
        }
    }

    /// The same error, located at entry `index` of a batch.
    pub fn at_batch_index(mut self, index: usize) -> Self {
        self.batch_index = Some(index);
        self
    }
}

/// The error of every store in the workspace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument no store accepts. Nothing was sent to the backend; retrying cannot help.
    #[error(transparent)]
    InvalidInput(#[from] InvalidInput),

    /// The backend failed. `source` is the client library's own error.
    #[error("{backend} {operation} failed{}", if *retryable { " (may succeed if retried)" } else { "" })]
    Backend {
        /// Which backend, for example `"postgres"`.
        backend: &'static str,
        /// What the store was doing.
        operation: Operation,
        /// Whether the same call may succeed later (a dropped connection, a throttle, a
        /// failover), as opposed to a failure that will repeat (a missing table, a refused
        /// permission).
        retryable: bool,
        /// The backend's own error.
        #[source]
        source: BoxError,
    },

    /// The operation did not finish within the store's configured timeout. It may or may not
    /// have taken effect; retrying is safe because every save is idempotent.
    #[error("{backend} {operation} timed out after {after:?}")]
    Timeout {
        /// Which backend.
        backend: &'static str,
        /// What the store was doing.
        operation: Operation,
        /// The timeout that elapsed.
        after: Duration,
    },

    /// An exclusive checkpoint exists under a different query than the one claiming it.
    #[error("query changed: the checkpoint was created over query {stored}, not {requested}")]
    QueryChanged {
        /// The fingerprint stored with the checkpoint.
        stored: Fingerprint,
        /// The fingerprint of the claim that was refused.
        requested: Fingerprint,
    },

    /// An exclusive checkpoint was no longer at the position an advance expected: another
    /// process under the same name has moved it.
    #[error("checkpoint moved: expected it at {expected}, it is {}", match current { Some(p) => p.to_string(), None => "absent".to_owned() })]
    Moved {
        /// The `from` position the advance expected.
        expected: u64,
        /// Where the checkpoint is now, or `None` when it does not exist.
        current: Option<u64>,
    },

    /// [`start_at`](crate::CheckpointAdmin::start_at) on a subscription that has a checkpoint
    /// already: starting it would move that checkpoint.
    #[error("subscription {subscription:?} of group {group:?} already has checkpoints")]
    Exists {
        /// The group.
        group: String,
        /// The subscription that exists.
        subscription: String,
    },

    /// A subscription that was [`retire`](crate::CheckpointAdmin::retire)d: its name cannot be
    /// started or claimed again until it is [`purge`](crate::CheckpointAdmin::purge)d.
    #[error(
        "subscription {subscription:?} of group {group:?} is retired: purge it before using its name again"
    )]
    Retired {
        /// The group.
        group: String,
        /// The retired subscription.
        subscription: String,
    },

    /// A [`renew`](crate::LeaseStore::renew) by an owner that holds no live lease of the
    /// subscription: its leases expired (and may be held by another owner now), or it never
    /// acquired any. It must stop treating any lease of the subscription as held and
    /// [`acquire`](crate::LeaseStore::acquire) again, under new epochs.
    #[error(
        "owner {owner:?} holds no live lease of subscription {subscription:?} of group {group:?}: they expired or were never acquired"
    )]
    NotHeld {
        /// The group.
        group: String,
        /// The subscription.
        subscription: String,
        /// The owner that renewed.
        owner: String,
    },

    /// [`purge`](crate::CheckpointAdmin::purge) of a subscription that still has live
    /// checkpoints: only a retired subscription is purged.
    #[error(
        "subscription {subscription:?} of group {group:?} is not retired: retire it before purging it"
    )]
    NotRetired {
        /// The group.
        group: String,
        /// The subscription that is still live.
        subscription: String,
    },
}

impl Error {
    /// A backend failure with its source error.
    pub fn backend(
        backend: &'static str,
        operation: Operation,
        retryable: bool,
        source: impl Into<BoxError>,
    ) -> Self {
        Error::Backend {
            backend,
            operation,
            retryable,
            source: source.into(),
        }
    }

    /// Whether the same call may succeed if retried later.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Backend { retryable, .. } => *retryable,
            Error::Timeout { .. } => true,
            Error::InvalidInput(_)
            | Error::QueryChanged { .. }
            | Error::Moved { .. }
            | Error::Exists { .. }
            | Error::Retired { .. }
            | Error::NotHeld { .. }
            | Error::NotRetired { .. } => false,
        }
    }

    /// [`Error::Exists`] for `subscription` of `group`.
    pub fn exists(group: &str, subscription: &str) -> Self {
        Error::Exists {
            group: group.to_owned(),
            subscription: subscription.to_owned(),
        }
    }

    /// [`Error::Retired`] for `subscription` of `group`.
    pub fn retired(group: &str, subscription: &str) -> Self {
        Error::Retired {
            group: group.to_owned(),
            subscription: subscription.to_owned(),
        }
    }

    /// [`Error::NotHeld`] for `owner` of `subscription` of `group`.
    pub fn not_held(group: &str, subscription: &str, owner: &str) -> Self {
        Error::NotHeld {
            group: group.to_owned(),
            subscription: subscription.to_owned(),
            owner: owner.to_owned(),
        }
    }

    /// [`Error::NotRetired`] for `subscription` of `group`.
    pub fn not_retired(group: &str, subscription: &str) -> Self {
        Error::NotRetired {
            group: group.to_owned(),
            subscription: subscription.to_owned(),
        }
    }

    /// The invalid argument, when this is [`Error::InvalidInput`].
    pub fn invalid_input(&self) -> Option<&InvalidInput> {
        match self {
            Error::InvalidInput(invalid) => Some(invalid),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_error_keeps_its_source() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let error = Error::backend("test", Operation::Save, true, io);
        let source = std::error::Error::source(&error).expect("a source");
        assert_eq!(source.to_string(), "reset by peer");
        assert!(error.is_retryable());
        assert_eq!(
            error.to_string(),
            "test save failed (may succeed if retried)"
        );
    }

    #[test]
    fn invalid_input_names_argument_reason_and_batch_entry() {
        let error: Error = InvalidInput::new(Argument::Subscription, InvalidReason::Empty)
            .at_batch_index(3)
            .into();
        assert_eq!(
            error.to_string(),
            "invalid subscription (batch entry 3): it is empty"
        );
        assert!(!error.is_retryable());
    }
}
