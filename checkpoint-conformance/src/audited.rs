//! A layer that keeps every error its store's calls return, for fault-injection tests.

use std::sync::{Mutex, MutexGuard, PoisonError};

use checkpoint_core::Error;
use checkpoint_core::door::BoxFuture;
use checkpoint_core::layer::{Around, Call, Layered};

use crate::Failure;
use crate::failure::error_chain;

/// A store that records every error its calls return (made by [`audited`]), so a
/// fault-injection test can check the type of each one: under a dropped connection, a restart
/// or a paused server, the contract allows a call to fail only with a retryable
/// [`Error::Backend`] or an [`Error::Timeout`], never with anything else (and never to panic).
/// [`inner`](Layered::inner) is the store, for calls that should not be audited;
/// [`around`](Layered::around) the [`Audit`], whose [`take_errors`](Audit::take_errors) says
/// what it recorded.
///
/// [`run_histories_with_faults`](crate::history::run_histories_with_faults) keeps only the
/// text of the errors in its history; run it on an `AuditedStore` to check their types too.
pub type AuditedStore<S> = Layered<S, Audit>;

/// `inner`, audited.
pub fn audited<S>(inner: S) -> AuditedStore<S> {
    Layered::new(inner, Audit::default())
}

/// The layer of an [`AuditedStore`]: the errors its store's calls returned.
#[derive(Debug, Default)]
pub struct Audit {
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

impl Audit {
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

impl Around for Audit {
    fn around<'a, T: Send + 'static>(
        &'a self,
        _call: Call<'a>,
        request: BoxFuture<'a, T>,
    ) -> BoxFuture<'a, T> {
        Box::pin(async move { self.record(request.await) })
    }
}
