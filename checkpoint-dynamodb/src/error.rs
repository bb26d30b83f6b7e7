//! Turning the SDK's errors into the workspace's [`Error`], keeping them as the source, and
//! deciding whether a retry may help.

use std::fmt;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use checkpoint_core::{Error, Operation, UnexpectedValue};

use crate::BACKEND;

/// Error codes after which the same request may succeed: throttling, transient server trouble
/// and conflicts with a concurrent transaction. These are the typed codes the service sends
/// (`ProvideErrorMetadata::code`), never parsed out of a message.
const RETRYABLE_CODES: &[&str] = &[
    "ThrottlingException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionConflictException",
    "TransactionInProgressException",
    "ReplicatedWriteConflictException",
    "RequestTimeout",
    "RequestTimeoutException",
];

/// An SDK error as [`Error::Backend`], with the SDK error as its source.
pub(crate) fn sdk_error<E>(operation: Operation, error: SdkError<E, HttpResponse>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let retryable = is_retryable(&error);
    Error::backend(BACKEND, operation, retryable, error)
}

/// Whether the same call may succeed later, from the kind of the SDK error.
///
/// The SDK has already retried what its retry configuration (set by the user on the client)
/// allows; this only tells the caller whether trying again later makes sense.
pub(crate) fn is_retryable<E: ProvideErrorMetadata>(error: &SdkError<E, HttpResponse>) -> bool {
    match error {
        // No complete answer arrived: the request may not have reached the server at all.
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => true,
        // A connector error caused by the user's own configuration repeats; I/O, timeouts and
        // the rest do not have to.
        SdkError::DispatchFailure(failure) => !failure.is_user(),
        SdkError::ServiceError(service) => {
            let status = service.raw().status();
            status.is_server_error()
                || status.as_u16() == 429
                || service
                    .err()
                    .code()
                    .is_some_and(|code| RETRYABLE_CODES.contains(&code))
        }
        // A request that could not be built fails the same way again.
        SdkError::ConstructionFailure(_) => false,
        _ => false,
    }
}

/// A value read back that this store cannot have written (a wrong type, a missing attribute, a
/// position out of range), as the non-retryable error of `operation`: retrying reads the same
/// item again.
pub(crate) fn unexpected(operation: Operation) -> impl FnOnce(UnexpectedValue) -> Error {
    move |value| value.into_error(BACKEND, operation)
}

/// A table that exists under the store's name with another key schema than the store needs.
#[derive(Debug)]
pub(crate) struct KeySchemaMismatch {
    pub(crate) table: String,
}

impl fmt::Display for KeySchemaMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "table `{}` exists with another key schema than `group` (HASH, S), `key` (RANGE, S)",
            self.table
        )
    }
}

impl std::error::Error for KeySchemaMismatch {}

/// A request the SDK refused to build (a missing required field: a bug in this crate).
pub(crate) fn build_error(
    operation: Operation,
    error: aws_sdk_dynamodb::error::BuildError,
) -> Error {
    Error::backend(BACKEND, operation, false, error)
}

/// A write that kept finding its item changed under it, more times than the store tries.
#[derive(Debug)]
pub(crate) struct Contended {
    pub(crate) attempts: u32,
}

impl fmt::Display for Contended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the checkpoint's item changed under the write {} times in a row \
             (concurrent purges, or something else writing the table)",
            self.attempts
        )
    }
}

impl std::error::Error for Contended {}

/// Whether an SDK error is a refused condition (`ConditionalCheckFailedException`), from its
/// typed code.
pub(crate) fn is_condition_failed<E: ProvideErrorMetadata>(
    error: &SdkError<E, HttpResponse>,
) -> bool {
    error
        .as_service_error()
        .and_then(|e| e.code())
        .is_some_and(|code| code == "ConditionalCheckFailedException")
}
