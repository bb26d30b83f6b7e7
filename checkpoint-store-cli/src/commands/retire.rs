//! `checkpoint retire`.

use super::{Context, count, failed, state_of, subscription_of};
use crate::error::CliError;

/// Retires `subscription` of `group` after a confirmation.
///
/// A name with no checkpoint is refused unless `force` (a typo would otherwise retire a name
/// nobody uses, and keep it from being started until purged); `force` is for a process that
/// must be stopped before it ever saved. A name already retired is left as it is.
///
/// # Errors
///
/// Refused (exit code 3) for a name without checkpoints and without `force`; a failure when
/// the operator declines; the store's error.
pub async fn retire(
    context: Context<'_>,
    group: &str,
    subscription: &str,
    force: bool,
) -> Result<(), CliError> {
    let (live, retired) = state_of(context.store, group, subscription).await?;
    let what = subscription_of(group, subscription);
    if live.is_empty() && retired {
        writeln!(context.out, "{what} is already retired")?;
        return Ok(());
    }
    if live.is_empty() && !force {
        return Err(CliError::refused(format!(
            "{what} has no checkpoints: nothing to retire (a typo? --force retires the name \
             anyway, to stop a process that has not saved yet)"
        )));
    }
    let question = format!(
        "Retire {what} on {} ({})? Its checkpoints disappear and every later save under its \
         name is ignored, until it is purged.",
        context.endpoint,
        count(live.len())
    );
    if !context.confirm.confirm(&question)? {
        return Err(CliError::failure(format!(
            "not confirmed: {what} was not retired"
        )));
    }
    context
        .store
        .retire(group, subscription)
        .await
        .map_err(|e| failed(&e))?;
    // No count here: the one in the question was read before the confirmation, and a
    // process still saving under the name may have added a partition since; the retire
    // removed whatever was there when it ran.
    writeln!(
        context.out,
        "retired {what}; purge it once no process can still run under it"
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use checkpoint_core::{CheckpointAdmin, CheckpointStore, InMemoryCheckpointStore};

    use super::*;
    use crate::commands::testing::run;
    use crate::error::Exit;

    async fn store() -> InMemoryCheckpointStore {
        let store = InMemoryCheckpointStore::new();
        store.save("g", "s", 0, 10).await.unwrap();
        store.save("g", "s", 1, 11).await.unwrap();
        store.save("g", "t", 0, 1).await.unwrap();
        store
    }

    #[tokio::test]
    async fn retires_after_asking() {
        let store = store().await;
        let (result, out, questions) =
            run(&store, true, async |c| retire(c, "g", "s", false).await).await;
        result.unwrap();
        assert_eq!(
            out,
            "retired subscription \"s\" of group \"g\"; purge it once no process can still \
             run under it\n"
        );
        assert_eq!(
            questions,
            vec![
                "Retire subscription \"s\" of group \"g\" on memory (2 checkpoints)? Its \
                 checkpoints disappear and every later save under its name is ignored, until \
                 it is purged."
                    .to_owned()
            ]
        );
        assert_eq!(store.retired("g").await.unwrap(), vec!["s".to_owned()]);
        store.save("g", "s", 0, 99).await.unwrap();
        assert_eq!(store.load("g", "s", 0).await.unwrap(), None);
    }

    #[tokio::test]
    async fn declined_changes_nothing() {
        let store = store().await;
        let (result, out, _) = run(&store, false, async |c| retire(c, "g", "s", false).await).await;
        let error = result.unwrap_err();
        assert_eq!(error.exit(), Exit::Failure);
        assert_eq!(
            error.message(),
            "not confirmed: subscription \"s\" of group \"g\" was not retired"
        );
        assert_eq!(out, "");
        assert!(store.retired("g").await.unwrap().is_empty());
        assert_eq!(store.load("g", "s", 0).await.unwrap(), Some(10));
    }

    #[tokio::test]
    async fn an_unknown_name_needs_force() {
        let store = store().await;
        let (result, _, questions) =
            run(&store, true, async |c| retire(c, "g", "typo", false).await).await;
        let error = result.unwrap_err();
        assert_eq!(error.exit(), Exit::Refused);
        assert!(error.message().contains("--force"), "{}", error.message());
        assert!(questions.is_empty());
        assert!(store.retired("g").await.unwrap().is_empty());

        let (result, out, _) =
            run(&store, true, async |c| retire(c, "g", "typo", true).await).await;
        result.unwrap();
        assert!(out.starts_with("retired subscription \"typo\""), "{out}");
        assert_eq!(store.retired("g").await.unwrap(), vec!["typo".to_owned()]);
    }

    #[tokio::test]
    async fn already_retired_is_left_as_it_is() {
        let store = store().await;
        store.retire("g", "s").await.unwrap();
        let (result, out, questions) =
            run(&store, true, async |c| retire(c, "g", "s", false).await).await;
        result.unwrap();
        assert_eq!(
            out,
            "subscription \"s\" of group \"g\" is already retired\n"
        );
        assert!(questions.is_empty());
    }
}
