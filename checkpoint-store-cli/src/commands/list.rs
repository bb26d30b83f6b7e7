//! `checkpoint list`.

use super::{Context, failed, quoted, subscription_of};
use crate::error::CliError;
use crate::output::Listing;
use crate::output::write_json;

/// Prints the live checkpoints of `group` (of `subscription` only, when given), sorted by
/// subscription and partition, and its retired subscriptions: a table, or the JSON object of
/// [`Listing::to_json`].
///
/// # Errors
///
/// Refused (exit code 3) when there is no live checkpoint to show, after printing what there
/// is (the retired line, or the JSON object); the store's error.
pub async fn list(
    context: Context<'_>,
    group: &str,
    subscription: Option<&str>,
    json: bool,
) -> Result<(), CliError> {
    let mut checkpoints = context.store.list(group).await.map_err(|e| failed(&e))?;
    let mut retired = context.store.retired(group).await.map_err(|e| failed(&e))?;
    if let Some(subscription) = subscription {
        checkpoints.retain(|checkpoint| checkpoint.subscription == subscription);
        retired.retain(|name| name == subscription);
    }
    let listing = Listing::new(group, checkpoints, retired);
    if json {
        write_json(context.out, &listing.to_json())?;
    } else {
        listing.write_table(context.out)?;
    }
    if !listing.checkpoints.is_empty() {
        return Ok(());
    }
    let what = match subscription {
        Some(subscription) => subscription_of(group, subscription),
        None => format!("group {}", quoted(group)),
    };
    let message = match (subscription, listing.retired.is_empty()) {
        (Some(_), false) => format!("no checkpoints: {what} is retired"),
        (None, false) => format!(
            "no checkpoints in {what}, only retired subscriptions ({})",
            listing.retired.len()
        ),
        (Some(_), true) => format!("no checkpoints for {what}"),
        (None, true) => format!("no checkpoints in {what}"),
    };
    Err(CliError::refused(message))
}

#[cfg(test)]
mod tests {
    use checkpoint_core::{CheckpointAdmin, CheckpointStore, InMemoryCheckpointStore};

    use super::*;
    use crate::commands::testing::run;
    use crate::error::Exit;

    async fn store() -> InMemoryCheckpointStore {
        let store = InMemoryCheckpointStore::new();
        store.save("g", "b", 1, 20).await.unwrap();
        store.save("g", "a", 7, 5).await.unwrap();
        store.save("g", "b", 0, 10).await.unwrap();
        store.save("other", "a", 0, 1).await.unwrap();
        store.save("g", "old", 0, 3).await.unwrap();
        store.retire("g", "old").await.unwrap();
        store
    }

    #[tokio::test]
    async fn a_table_sorted_by_subscription_and_partition_with_the_retired() {
        let store = store().await;
        let (result, out, _) = run(&store, false, async |c| list(c, "g", None, false).await).await;
        result.unwrap();
        assert_eq!(
            out,
            "SUBSCRIPTION  PARTITION  POSITION\n\
             a                     7         5\n\
             b                     0        10\n\
             b                     1        20\n\
             retired: old\n"
        );
    }

    #[tokio::test]
    async fn one_subscription() {
        let store = store().await;
        let (result, out, _) =
            run(&store, false, async |c| list(c, "g", Some("b"), true).await).await;
        result.unwrap();
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"group": "g", "retired": [], "checkpoints": [
                {"subscription": "b", "partition": 0, "position": 10},
                {"subscription": "b", "partition": 1, "position": 20},
            ]})
        );
        // One line, the fields in the order of their names.
        assert_eq!(
            out,
            concat!(
                r#"{"checkpoints":[{"partition":0,"position":10,"subscription":"b"},"#,
                r#"{"partition":1,"position":20,"subscription":"b"}],"group":"g","retired":[]}"#,
                "\n"
            )
        );
    }

    #[tokio::test]
    async fn nothing_to_show_is_refused_after_printing_what_there_is() {
        let store = store().await;
        let (result, out, _) =
            run(&store, false, async |c| list(c, "nope", None, true).await).await;
        let error = result.unwrap_err();
        assert_eq!(error.exit(), Exit::Refused);
        assert_eq!(error.message(), "no checkpoints in group \"nope\"");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&out).unwrap(),
            serde_json::json!({"group": "nope", "checkpoints": [], "retired": []})
        );
        assert_eq!(
            out,
            "{\"checkpoints\":[],\"group\":\"nope\",\"retired\":[]}\n"
        );

        let (result, out, _) = run(&store, false, async |c| {
            list(c, "g", Some("old"), false).await
        })
        .await;
        assert_eq!(
            result.unwrap_err().message(),
            "no checkpoints: subscription \"old\" of group \"g\" is retired"
        );
        assert_eq!(out, "retired: old\n");

        let (result, _, _) = run(&store, false, async |c| {
            list(c, "g", Some("typo"), false).await
        })
        .await;
        assert_eq!(
            result.unwrap_err().message(),
            "no checkpoints for subscription \"typo\" of group \"g\""
        );
    }
}
