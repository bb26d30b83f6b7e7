//! `checkpoint parked`.

use checkpoint_core::validation::validate_key;

use super::{Context, failed, quoted, subscription_of};
use crate::error::CliError;
use crate::output::parked::ParkedListing;
use crate::output::write_json;

/// Prints the entries parked under `group` (of `subscription` only, when given), sorted by
/// subscription, partition and position: a table, or the JSON object of
/// [`ParkedListing::to_json`]. One request.
///
/// # Errors
///
/// A usage error (exit code 2) for an invalid name, before any request; refused (exit code 3)
/// when there is no parked entry to show, after printing what there is (the JSON object, or
/// nothing); the store's error.
pub async fn parked(
    context: Context<'_>,
    group: &str,
    subscription: Option<&str>,
    json: bool,
) -> Result<(), CliError> {
    if let Some(subscription) = subscription {
        validate_key(group, subscription).map_err(|e| failed(&e))?;
    }
    let mut entries = context.store.parked(group).await.map_err(|e| failed(&e))?;
    if let Some(subscription) = subscription {
        entries.retain(|entry| entry.subscription == subscription);
    }
    let listing = ParkedListing::new(group, entries);
    if json {
        write_json(context.out, &listing.to_json())?;
    } else {
        listing.write_table(context.out)?;
    }
    if !listing.entries.is_empty() {
        return Ok(());
    }
    Err(CliError::refused(match subscription {
        Some(subscription) => format!(
            "no parked entries for {}",
            subscription_of(group, subscription)
        ),
        None => format!("no parked entries in group {}", quoted(group)),
    }))
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
        for (subscription, partition, position) in [("b", 1, 20), ("a", 0, 7), ("b", 0, 3)] {
            let entry = ParkedEntry::new(subscription, partition, position, "boom", 5);
            store.park("g", &entry).await.unwrap();
        }
        store.retry_parked("g", "b", 1, 20).await.unwrap();
        store
    }

    #[tokio::test]
    async fn every_entry_of_the_group_sorted() {
        let store = store().await;
        let (result, out, _) =
            run(&store, false, async |c| parked(c, "g", None, false).await).await;
        result.unwrap();
        let lines: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(lines.len(), 4, "{out}");
        assert_eq!(lines[1][..4], ["a", "0", "7", "5"], "{out}");
        assert_eq!(lines[2][..3], ["b", "0", "3"], "{out}");
        assert_eq!(lines[3][..3], ["b", "1", "20"], "{out}");
        assert_eq!(lines[3][5..], ["yes", "boom"], "{out}");
    }

    #[tokio::test]
    async fn one_subscription_in_json() {
        let store = store().await;
        let (result, out, _) = run(&store, false, async |c| {
            parked(c, "g", Some("b"), true).await
        })
        .await;
        result.unwrap();
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        let positions: Vec<u64> = value["parked"]
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["position"].as_u64().unwrap())
            .collect();
        assert_eq!(positions, [3, 20], "{value}");
        assert_eq!(value["parked"][1]["retry_requested"], true, "{value}");
    }

    #[tokio::test]
    async fn nothing_to_show_is_refused_after_printing_what_there_is() {
        let store = store().await;
        let (result, out, _) =
            run(&store, false, async |c| parked(c, "nope", None, true).await).await;
        let error = result.unwrap_err();
        assert_eq!(error.exit(), Exit::Refused);
        assert_eq!(error.message(), "no parked entries in group \"nope\"");
        assert_eq!(out, "{\"group\":\"nope\",\"parked\":[]}\n");

        let (result, out, _) = run(&store, false, async |c| {
            parked(c, "g", Some("c"), false).await
        })
        .await;
        assert_eq!(
            result.unwrap_err().message(),
            "no parked entries for subscription \"c\" of group \"g\""
        );
        assert_eq!(out, "");

        let (result, _, _) = run(&store, false, async |c| {
            parked(c, "g", Some(""), false).await
        })
        .await;
        assert_eq!(result.unwrap_err().exit(), Exit::Usage);
    }
}
