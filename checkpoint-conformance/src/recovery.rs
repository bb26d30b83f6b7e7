//! Waiting for a store to work again after a fault.

use std::time::{Duration, Instant};

use checkpoint_core::CheckpointStore;

use crate::Failure;
use crate::failure::error_chain;

/// How a store came back after a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recovery {
    /// From the first attempt to the save that succeeded.
    pub took: Duration,
    /// Attempts that failed before it, each with a retryable error.
    pub failures: u32,
}

/// Retries one `save` every 10 ms until it succeeds, as a caller would after a dropped
/// connection, a restart or a pause.
///
/// Fails when an attempt returns an error that is not retryable (the contract allows only
/// retryable errors for a fault that goes away), or when the store has not recovered within
/// `within`.
pub async fn save_until_recovered(
    store: &dyn CheckpointStore,
    group: &str,
    subscription: &str,
    partition: u32,
    position: u64,
    within: Duration,
) -> Result<Recovery, Failure> {
    let started = Instant::now();
    let mut failures = 0;
    loop {
        match store.save(group, subscription, partition, position).await {
            Ok(()) => {
                return Ok(Recovery {
                    took: started.elapsed(),
                    failures,
                });
            }
            Err(error) if !error.is_retryable() => {
                return Err(Failure::new(format!(
                    "a save after the fault failed with an error that is not retryable: {}",
                    error_chain(&error)
                )));
            }
            Err(error) => {
                failures += 1;
                if started.elapsed() >= within {
                    return Err(Failure::new(format!(
                        "the store did not recover within {within:?}: {}",
                        error_chain(&error)
                    )));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}
