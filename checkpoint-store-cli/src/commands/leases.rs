//! `checkpoint leases`.

use super::{Context, failed, quoted, sorted_names, subscription_of};
use crate::connect::StoreApi;
use crate::error::CliError;
use crate::output::leases::{LeaseListing, SubscriptionLeases};
use crate::output::write_json;

/// Prints the live leases of `group`'s subscriptions (of `subscription` only, when given) and
/// their live owners: two tables, or the JSON object of [`LeaseListing::to_json`].
///
/// No store can list the subscriptions that have leases, so without `subscription` it reads
/// the leases of every subscription that has checkpoints or is retired (one request for the
/// checkpoints, one for the retired names, one per subscription); a subscription whose workers
/// have saved no checkpoint yet shows only when named.
///
/// # Errors
///
/// Refused (exit code 3) when there is no live lease or owner to show, after printing what
/// there is (the JSON object, or nothing); the store's error.
pub async fn leases(
    context: Context<'_>,
    group: &str,
    subscription: Option<&str>,
    json: bool,
) -> Result<(), CliError> {
    let names = match subscription {
        Some(subscription) => vec![subscription.to_owned()],
        None => known_subscriptions(context.store, group).await?,
    };
    let mut subscriptions = Vec::with_capacity(names.len());
    for name in names {
        let table = context
            .store
            .leases(group, &name)
            .await
            .map_err(|e| failed(&e))?;
        subscriptions.push(SubscriptionLeases {
            subscription: name,
            table,
        });
    }
    let listing = LeaseListing::new(group, subscriptions);
    if json {
        write_json(context.out, &listing.to_json())?;
    } else {
        listing.write_tables(context.out)?;
    }
    if !listing.is_empty() {
        return Ok(());
    }
    Err(CliError::refused(match subscription {
        Some(subscription) => format!(
            "no live leases or workers for {}",
            subscription_of(group, subscription)
        ),
        None => format!(
            "no live leases or workers in group {} (in its subscriptions with checkpoints or \
             retired: name another with --subscription)",
            quoted(group)
        ),
    }))
}

/// The subscriptions of `group` that have checkpoints or are retired, sorted, each once.
async fn known_subscriptions(store: &dyn StoreApi, group: &str) -> Result<Vec<String>, CliError> {
    let checkpoints = store.list(group).await.map_err(|e| failed(&e))?;
    let retired = store.retired(group).await.map_err(|e| failed(&e))?;
    Ok(sorted_names(
        checkpoints
            .into_iter()
            .map(|checkpoint| checkpoint.subscription)
            .chain(retired),
    ))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use checkpoint_core::{CheckpointAdmin, CheckpointStore, InMemoryCheckpointStore, LeaseStore};

    use super::*;
    use crate::commands::testing::run;
    use crate::error::Exit;

    const HOUR: Duration = Duration::from_secs(3600);

    /// `a` with checkpoints and leases, `old` retired with a lease acquired before, `quiet`
    /// with leases and no checkpoint, `idle` with checkpoints and nothing leased.
    async fn store() -> InMemoryCheckpointStore {
        let store = InMemoryCheckpointStore::new();
        store.save("g", "a", 0, 1).await.unwrap();
        store.save("g", "idle", 0, 1).await.unwrap();
        store.acquire("g", "a", "w1", &[0, 1], HOUR).await.unwrap();
        store.acquire("g", "a", "w2", &[], HOUR).await.unwrap();
        store.request_handover("g", "a", "w2", &[1]).await.unwrap();
        store.acquire("g", "old", "w1", &[0], HOUR).await.unwrap();
        store.retire("g", "old").await.unwrap();
        store.acquire("g", "quiet", "w3", &[4], HOUR).await.unwrap();
        store
    }

    #[tokio::test]
    async fn every_known_subscription_with_live_leases_or_workers() {
        let store = store().await;
        let (result, out, _) = run(&store, false, async |c| leases(c, "g", None, true).await).await;
        result.unwrap();
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        let names: Vec<&str> = value["subscriptions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["subscription"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "old"], "{value}");
        let a = &value["subscriptions"][0];
        assert_eq!(a["leases"][1]["owner"], "w1", "{value}");
        assert_eq!(a["leases"][1]["handover_requested_by"], "w2", "{value}");
        assert_eq!(a["owners"].as_array().unwrap().len(), 2, "{value}");
        let left = a["leases"][0]["time_left_ms"].as_u64().unwrap();
        assert!(left > 3_500_000 && left <= 3_600_000, "{value}");
    }

    #[tokio::test]
    async fn a_named_subscription_needs_no_checkpoint() {
        let store = store().await;
        let (result, out, _) = run(&store, false, async |c| {
            leases(c, "g", Some("quiet"), false).await
        })
        .await;
        result.unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 5, "{out}");
        assert!(
            lines[1].starts_with("quiet                 4  w3 "),
            "{out}"
        );
        assert!(lines[4].starts_with("quiet         w3 "), "{out}");
    }

    #[tokio::test]
    async fn nothing_live_is_refused_after_printing_what_there_is() {
        let store = store().await;
        let (result, out, _) =
            run(&store, false, async |c| leases(c, "nope", None, true).await).await;
        let error = result.unwrap_err();
        assert_eq!(error.exit(), Exit::Refused);
        assert!(
            error
                .message()
                .starts_with("no live leases or workers in group \"nope\" ("),
            "{}",
            error.message()
        );
        assert_eq!(out, "{\"group\":\"nope\",\"subscriptions\":[]}\n");

        let (result, out, _) = run(&store, false, async |c| {
            leases(c, "g", Some("idle"), false).await
        })
        .await;
        assert_eq!(
            result.unwrap_err().message(),
            "no live leases or workers for subscription \"idle\" of group \"g\""
        );
        assert_eq!(out, "");
    }
}
