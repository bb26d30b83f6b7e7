//! `checkpoint parked drop`.

use super::Context;
use super::parked_key::ParkedKey;
use crate::error::CliError;
use crate::output::parked::error_summary;
use crate::output::time::rfc3339_millis;

/// Removes the record of the entry parked at `position` of `partition` of `subscription`
/// (`ParkedStore::unpark`) after a confirmation: it is not retried any more, and nothing
/// records it. Reads the group's parked entries first, to refuse before asking when nothing is
/// parked there and to show the entry in the question.
///
/// # Errors
///
/// A usage error (exit code 2) for an invalid name or position, before any request; refused
/// (exit code 3) when nothing is parked there, before asking or (removed meanwhile: retried
/// successfully, or dropped by someone else) after; a failure when the operator declines; the
/// store's error.
pub async fn parked_drop(
    context: Context<'_>,
    group: &str,
    subscription: &str,
    partition: u32,
    position: u64,
) -> Result<(), CliError> {
    let key = ParkedKey::checked(group, subscription, partition, position)?;
    let at = &key.at;
    let entry = key.find(context.store).await?;
    let question = format!(
        "Drop the parked entry at {at} on {} (parked at {} after {} attempts: {})? It will not be \
         retried, and nothing will record it any more.",
        context.endpoint,
        rfc3339_millis(entry.parked_at),
        entry.attempts,
        error_summary(&entry.error)
    );
    if !context.confirm.confirm(&question)? {
        return Err(CliError::failure(format!(
            "not confirmed: the parked entry at {at} was not dropped"
        )));
    }
    let removed = context
        .store
        .unpark(group, subscription, partition, position)
        .await;
    // Not found between the read and now: its retry succeeded, or someone else dropped it.
    key.found(removed)?;
    writeln!(context.out, "dropped the parked entry at {at}")?;
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
            let entry = ParkedEntry::new("s", 3, position, "no such customer\nat …", 5);
            store.park("g", &entry).await.unwrap();
        }
        store
    }

    async fn positions(store: &InMemoryCheckpointStore) -> Vec<u64> {
        let parked = store.parked("g").await.unwrap();
        parked.iter().map(|entry| entry.position).collect()
    }

    #[tokio::test]
    async fn drops_that_entry_only_after_asking() {
        let store = store().await;
        let (result, out, questions) = run(&store, true, async |c| {
            parked_drop(c, "g", "s", 3, 41).await
        })
        .await;
        result.unwrap();
        assert_eq!(
            out,
            "dropped the parked entry at position 41 of partition 3 of subscription \"s\" of \
             group \"g\"\n"
        );
        assert_eq!(questions.len(), 1);
        let question = &questions[0];
        assert!(
            question.starts_with(
                "Drop the parked entry at position 41 of partition 3 of subscription \"s\" of \
                 group \"g\" on memory (parked at "
            ),
            "{question}"
        );
        assert!(
            question.ends_with(
                " after 5 attempts: no such customer…)? It will not be retried, and nothing \
                 will record it any more."
            ),
            "{question}"
        );
        assert_eq!(positions(&store).await, [42]);
    }

    #[tokio::test]
    async fn declined_changes_nothing() {
        let store = store().await;
        let (result, out, _) = run(&store, false, async |c| {
            parked_drop(c, "g", "s", 3, 41).await
        })
        .await;
        let error = result.unwrap_err();
        assert_eq!(error.exit(), Exit::Failure);
        assert_eq!(
            error.message(),
            "not confirmed: the parked entry at position 41 of partition 3 of subscription \
             \"s\" of group \"g\" was not dropped"
        );
        assert_eq!(out, "");
        assert_eq!(positions(&store).await, [41, 42]);
    }

    #[tokio::test]
    async fn nothing_parked_there_is_refused_before_asking() {
        let store = store().await;
        let (result, _, questions) = run(&store, true, async |c| {
            parked_drop(c, "g", "t", 3, 41).await
        })
        .await;
        let error = result.unwrap_err();
        assert_eq!(error.exit(), Exit::Refused);
        assert!(
            error
                .message()
                .starts_with("nothing is parked at position 41")
        );
        assert!(questions.is_empty());
        assert_eq!(positions(&store).await, [41, 42]);
    }
}
