//! `checkpoint purge`.

use super::{Context, failed, state_of, subscription_of};
use crate::error::CliError;

/// Purges the retired `subscription` of `group` after a confirmation.
///
/// # Errors
///
/// Refused (exit code 3) when the subscription is live (retire it first) or has nothing to
/// purge; a failure when the operator declines; the store's error.
pub async fn purge(context: Context<'_>, group: &str, subscription: &str) -> Result<(), CliError> {
    let (live, retired) = state_of(context.store, group, subscription).await?;
    let what = subscription_of(group, subscription);
    if !retired {
        return Err(if live.is_empty() {
            CliError::refused(format!(
                "{what} is not retired and has no checkpoints: nothing to purge"
            ))
        } else {
            failed(&checkpoint_core::Error::not_retired(group, subscription))
        });
    }
    let question = format!(
        "Purge the retired {what} on {}? Its name can then be used again, and a process still \
         running under it would create checkpoints again.",
        context.endpoint
    );
    if !context.confirm.confirm(&question)? {
        return Err(CliError::failure(format!(
            "not confirmed: {what} was not purged"
        )));
    }
    context
        .store
        .purge(group, subscription)
        .await
        .map_err(|e| failed(&e))?;
    writeln!(context.out, "purged {what}; its name can be used again")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use checkpoint_core::{CheckpointAdmin, CheckpointStore, InMemoryCheckpointStore};

    use super::*;
    use crate::commands::testing::run;
    use crate::error::Exit;

    #[tokio::test]
    async fn purges_a_retired_name_after_asking() {
        let store = InMemoryCheckpointStore::new();
        store.save("g", "s", 0, 10).await.unwrap();
        store.retire("g", "s").await.unwrap();
        let (result, _, _) = run(&store, false, async |c| purge(c, "g", "s").await).await;
        assert_eq!(result.unwrap_err().exit(), Exit::Failure);
        assert_eq!(store.retired("g").await.unwrap(), vec!["s".to_owned()]);

        let (result, out, questions) = run(&store, true, async |c| purge(c, "g", "s").await).await;
        result.unwrap();
        assert_eq!(
            out,
            "purged subscription \"s\" of group \"g\"; its name can be used again\n"
        );
        assert_eq!(questions.len(), 1);
        assert!(store.retired("g").await.unwrap().is_empty());
        store.start_at("g", "s", &[(0, 0)]).await.unwrap();
    }

    #[tokio::test]
    async fn a_live_or_unknown_name_is_refused_without_asking() {
        let store = InMemoryCheckpointStore::new();
        store.save("g", "s", 0, 10).await.unwrap();
        for (name, message) in [
            (
                "s",
                "subscription \"s\" of group \"g\" is not retired: retire it before purging it",
            ),
            (
                "typo",
                "subscription \"typo\" of group \"g\" is not retired and has no checkpoints: \
                 nothing to purge",
            ),
        ] {
            let (result, _, questions) =
                run(&store, true, async |c| purge(c, "g", name).await).await;
            let error = result.unwrap_err();
            assert_eq!((error.exit(), error.message()), (Exit::Refused, message));
            assert!(questions.is_empty());
        }
        assert_eq!(store.load("g", "s", 0).await.unwrap(), Some(10));
    }
}
