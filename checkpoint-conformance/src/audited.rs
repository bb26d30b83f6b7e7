//! A store wrapper that keeps every error its calls return, for fault-injection tests.

use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use checkpoint_core::{Checkpoint, CheckpointStore, Error};

use crate::Failure;
use crate::failure::error_chain;

/// Wraps a store and records every error its calls return, so a fault-injection test can check
/// the type of each one: under a dropped connection, a restart or a paused server, the
/// contract allows a call to fail only with a retryable [`Error::Backend`] or an
/// [`Error::Timeout`], never with anything else (and never to panic).
///
/// [`run_histories_with_faults`](crate::history::run_histories_with_faults) keeps only the
/// text of the errors in its history; run it on an `AuditedStore` to check their types too.
#[derive(Debug)]
pub struct AuditedStore<S> {
    inner: S,
    errors: Mutex<Vec<String>>,
    /// Errors that are neither a retryable backend error nor a timeout.
    wrong: Mutex<Vec<String>>,
}

/// The errors an [`AuditedStore`] recorded, all of the allowed kinds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorTally {
    /// How many calls failed.
    pub count: usize,
    /// The first error, with its chain of sources, to show in a test's output.
    pub first: Option<String>,
}

fn lock(list: &Mutex<Vec<String>>) -> MutexGuard<'_, Vec<String>> {
    list.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<S> AuditedStore<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            errors: Mutex::new(Vec::new()),
            wrong: Mutex::new(Vec::new()),
        }
    }

    /// The wrapped store, for calls that should not be audited.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    fn record<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(error) = &result {
            if !matches!(
                error,
                Error::Backend {
                    retryable: true,
                    ..
                } | Error::Timeout { .. }
            ) {
                lock(&self.wrong).push(format!("{error:?}"));
            }
            lock(&self.errors).push(error_chain(error));
        }
        result
    }

    /// Takes the errors recorded so far and starts counting afresh: a failure if any of them
    /// was not a retryable backend error or a timeout, otherwise how many there were.
    pub fn take_errors(&self) -> Result<ErrorTally, Failure> {
        let wrong = std::mem::take(&mut *lock(&self.wrong));
        let errors = std::mem::take(&mut *lock(&self.errors));
        if !wrong.is_empty() {
            return Err(Failure::new(format!(
                "errors that are neither retryable backend errors nor timeouts: {wrong:#?}"
            )));
        }
        Ok(ErrorTally {
            count: errors.len(),
            first: errors.into_iter().next(),
        })
    }
}

#[async_trait]
impl<S: CheckpointStore> CheckpointStore for AuditedStore<S> {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        self.record(self.inner.list(group).await)
    }

    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        self.record(self.inner.load(group, subscription, partition).await)
    }

    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        self.record(
            self.inner
                .save(group, subscription, partition, position)
                .await,
        )
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        self.record(self.inner.save_all(group, checkpoints).await)
    }
}
