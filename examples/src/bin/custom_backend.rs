//! A custom backend under the conformance kit, as a user would run it.
//!
//! ```text
//! cargo run -p checkpoint-examples --features kit --bin custom_backend
//! ```
//!
//! Suppose your key-value service offers only `get` and `compare_and_swap`. This example
//! builds a checkpoint store on it (a small one: the service here lives in memory) and runs
//! every case of the kit against it, printing each clause.
//!
//! In your own crate you would rather let the kit's macro turn every case into a named test,
//! in `tests/conformance.rs`:
//!
//! ```ignore
//! async fn store() -> MyStore { MyStore::connect("...").await.unwrap() }
//! checkpoint_conformance::checkpoint_store_tests!(store);
//! ```
//!
//! and `cargo test` lists each clause passed or failed.

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::Mutex;

use async_trait::async_trait;
use checkpoint_conformance::MONOTONIC_CASES;
use checkpoint_core::validation::{validate_batch, validate_group, validate_key, validate_save};
use checkpoint_core::{Checkpoint, CheckpointStore, Error};

/// The service you have: a map of keys to values with compare-and-swap, nothing more.
#[derive(Default)]
struct CasService {
    entries: Mutex<HashMap<(String, String, u32), u64>>,
}

impl CasService {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String, u32), u64>> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn get(&self, key: &(String, String, u32)) -> Option<u64> {
        tokio::task::yield_now().await; // a network round trip
        self.entries().get(key).copied()
    }

    /// Sets `key` to `new` if it still holds `expected`; returns whether it did.
    async fn compare_and_swap(
        &self,
        key: (String, String, u32),
        expected: Option<u64>,
        new: u64,
    ) -> bool {
        tokio::task::yield_now().await;
        let mut entries = self.entries();
        if entries.get(&key).copied() != expected {
            return false;
        }
        entries.insert(key, new);
        true
    }

    async fn scan(&self, group: &str) -> Vec<Checkpoint> {
        tokio::task::yield_now().await;
        self.entries()
            .iter()
            .filter(|((g, _, _), _)| g == group)
            .map(|((_, s, p), position)| Checkpoint::new(s.clone(), *p, *position))
            .collect()
    }
}

/// The checkpoint store you write on it.
#[derive(Default)]
struct CasCheckpointStore {
    service: CasService,
}

#[async_trait]
impl CheckpointStore for CasCheckpointStore {
    async fn list(&self, group: &str) -> Result<Vec<Checkpoint>, Error> {
        validate_group(group)?;
        Ok(self.service.scan(group).await)
    }

    async fn load(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
    ) -> Result<Option<u64>, Error> {
        validate_key(group, subscription)?;
        Ok(self
            .service
            .get(&(group.to_owned(), subscription.to_owned(), partition))
            .await)
    }

    /// The service cannot compare-and-keep-the-maximum in one step, so `save` loops: read,
    /// stop if not ahead, otherwise swap only if nobody changed it in between. A plain
    /// read-then-write here would lose updates under concurrency (and the kit would say so).
    async fn save(
        &self,
        group: &str,
        subscription: &str,
        partition: u32,
        position: u64,
    ) -> Result<(), Error> {
        validate_save(group, subscription, position)?;
        let key = (group.to_owned(), subscription.to_owned(), partition);
        loop {
            let current = self.service.get(&key).await;
            if current.is_some_and(|stored| stored >= position) {
                return Ok(());
            }
            if self
                .service
                .compare_and_swap(key.clone(), current, position)
                .await
            {
                return Ok(());
            }
        }
    }

    async fn save_all(&self, group: &str, checkpoints: &[Checkpoint]) -> Result<(), Error> {
        validate_batch(group, checkpoints)?;
        for checkpoint in checkpoint_core::batch::highest_per_key(checkpoints) {
            self.save(
                group,
                &checkpoint.subscription,
                checkpoint.partition,
                checkpoint.position,
            )
            .await?;
        }
        Ok(())
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    println!("running the conformance kit against CasCheckpointStore:\n");
    let mut failed = 0;
    for case in MONOTONIC_CASES {
        let store = CasCheckpointStore::default();
        match (case.run)(&store).await {
            Ok(()) => println!("  ok      {}", case.name),
            Err(failure) => {
                failed += 1;
                println!("  FAILED  {}\n{failure}", case.name);
            }
        }
    }
    println!(
        "\n{} passed, {failed} failed",
        MONOTONIC_CASES.len() - failed
    );
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
