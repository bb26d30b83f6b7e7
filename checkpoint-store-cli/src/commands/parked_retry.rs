//! `checkpoint parked retry`.

use super::Context;
use super::parked_key::ParkedKey;
use crate::error::CliError;

/// Asks for the entry parked at `position` of `partition` of `subscription` to be retried
/// (`ParkedStore::retry_parked`): the subscription that holds the partition reads it again
/// and runs its handler within its parked poll interval. One request; not destructive, so it
/// asks nothing.
///
/// # Errors
///
/// A usage error (exit code 2) for an invalid name or position, before any request; refused
/// (exit code 3) when nothing is parked there; the store's error.
pub async fn parked_retry(
    context: Context<'_>,
    group: &str,
    subscription: &str,
    partition: u32,
    position: u64,
) -> Result<(), CliError> {
    let key = ParkedKey::checked(group, subscription, partition, position)?;
    let requested = context
        .store
        .retry_parked(group, subscription, partition, position)
        .await;
    key.found(requested)?;
    writeln!(
        context.out,
        "asked for a retry of the parked entry at {}: the subscription that holds the partition runs its \
         handler on it again, and removes the record when it succeeds",
        key.at
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use checkpoint_core::InMemoryCheckpointStore;
    use checkpoint_core::parked::{ParkedEntry, ParkedStore};

    use super::*;
    use crate::commands::testing::run;
    use crate::error::Exit;

    async fn store() -> InMemoryCheckpointStore {
        let store = InMemoryCheckpointStore::new();
        for position in [41, 42] {
            let entry = ParkedEntry::new("s", 3, position, "boom", 5);
            store.park("g", &entry).await.unwrap();
        }
        store
    }

    #[tokio::test]
    async fn sets_the_request_of_that_entry_only() {
        let store = store().await;
        let (result, out, questions) = run(&store, false, async |c| {
            parked_retry(c, "g", "s", 3, 41).await
        })
        .await;
        result.unwrap();
        assert!(questions.is_empty());
        assert!(
            out.starts_with(
                "asked for a retry of the parked entry at position 41 of partition 3 of \
                 subscription \"s\" of group \"g\": "
            ),
            "{out}"
        );
        let requested: Vec<bool> = store
            .parked("g")
            .await
            .unwrap()
            .iter()
            .map(|entry| entry.retry_requested)
            .collect();
        assert_eq!(requested, [true, false]);
    }

    #[tokio::test]
    async fn nothing_parked_there_is_refused() {
        let store = store().await;
        let (result, out, _) = run(&store, false, async |c| {
            parked_retry(c, "g", "s", 4, 41).await
        })
        .await;
        let error = result.unwrap_err();
        assert_eq!(error.exit(), Exit::Refused);
        assert_eq!(
            error.message(),
            "nothing is parked at position 41 of partition 4 of subscription \"s\" of group \
             \"g\" (checkpoint parked \"g\" lists what is)"
        );
        assert_eq!(out, "");
        let (result, _, _) = run(&store, false, async |c| {
            parked_retry(c, "g", "", 3, 41).await
        })
        .await;
        assert_eq!(result.unwrap_err().exit(), Exit::Usage);
        let (result, _, _) = run(&store, false, async |c| {
            parked_retry(c, "g", "s", 3, u64::MAX).await
        })
        .await;
        assert_eq!(result.unwrap_err().exit(), Exit::Usage);
    }
}
