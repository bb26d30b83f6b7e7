//! How a case reports that a store broke the contract.

use std::fmt;

use checkpoint_core::Error;

/// A contract violation found by a case, or an error the store should not have returned.
#[derive(Debug)]
pub struct Failure {
    message: String,
}

impl Failure {
    /// A failure with a message a person can act on.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same failure, its message naming the store it was found in (the kit's macros
    /// name the store's type), so a failure in a run over several backends says which.
    pub fn in_store(self, store: &str) -> Self {
        Self::new(format!("store `{store}`: {}", self.message))
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// An error where the contract expects success is a failure of the case, reported with the
/// whole chain of sources.
impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::new(format!("unexpected error: {}", error_chain(&error)))
    }
}

/// `error: source: source...`, the way a person reads an error chain.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The result of a case: `Ok` when the store kept the clause.
pub type CaseResult = Result<(), Failure>;

/// Fails the case with a formatted message unless `condition` holds.
#[macro_export]
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err($crate::Failure::new(format!($($message)+)));
        }
    };
}

/// Fails the case unless `left == right`, showing both and a formatted context.
#[macro_export]
macro_rules! ensure_eq {
    ($left:expr, $right:expr, $($message:tt)+) => {{
        let (left, right) = (&$left, &$right);
        if left != right {
            return Err($crate::Failure::new(format!(
                "{}\n  found:    {:?}\n  expected: {:?}",
                format!($($message)+), left, right
            )));
        }
    }};
}
