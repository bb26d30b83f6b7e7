//! `checkpoint status`.

use checkpoint_core::parked::ParkedEntry;
use checkpoint_core::validation::validate_key;
use checkpoint_core::{Checkpoint, Lease};

use super::{Context, failed, quoted, sorted_names, subscription_of};
use crate::error::CliError;
use crate::output::status::StatusListing;
use crate::output::write_json;
use crate::source::{SourceSpec, fallback_partitions, read_heads};

/// Prints where each partition of `group`'s subscriptions (of `subscription` only, when given)
/// stands: its checkpoint, its live lease's owner and epoch (as `leases` reads them), and how
/// many of its entries are parked; with `source`, the log's head of each partition and the
/// lag. A table, or the JSON object of [`StatusListing::to_json`].
///
/// Without `subscription`, the leases are read for every subscription that has checkpoints,
/// is retired or has parked entries (no store can list the subscriptions that have leases):
/// requests for the checkpoints, the retired names and the parked entries, then one per
/// subscription. The log is opened once there is something to show, with the partition count
/// it stores or else one more than the highest partition among the shown checkpoints, and
/// asked for the head of each shown partition once.
///
/// # Errors
///
/// A usage error (exit code 2) for an invalid name, before any request; refused (exit code 3)
/// when there is no partition to show, after printing what there is (the JSON object, or
/// nothing); the store's error; the log's error (nothing printed).
pub async fn status(
    context: Context<'_>,
    group: &str,
    subscription: Option<&str>,
    json: bool,
    source: Option<&SourceSpec>,
) -> Result<(), CliError> {
    if let Some(subscription) = subscription {
        validate_key(group, subscription).map_err(|e| failed(&e))?;
    }
    let (checkpoints, leases, parked) = read_store(&context, group, subscription).await?;
    let mut listing = StatusListing::new(group, &checkpoints, &leases, &parked);
    if let Some(source) = source
        && !listing.is_empty()
    {
        let opened = source.open(fallback_partitions(&checkpoints)).await?;
        let partitions = listing.partition_numbers();
        let heads = read_heads(
            opened.as_ref(),
            partitions,
            source.timeout(),
            &source.context(),
        )
        .await?;
        listing.set_heads(&heads);
    }
    if json {
        write_json(context.out, &listing.to_json())?;
    } else {
        listing.write_table(context.out)?;
    }
    if !listing.is_empty() {
        return Ok(());
    }
    Err(CliError::refused(match subscription {
        Some(subscription) => format!(
            "no checkpoints, live leases or parked entries for {}",
            subscription_of(group, subscription)
        ),
        None => format!(
            "no checkpoints, live leases or parked entries in group {} (leases read for its \
             subscriptions with checkpoints, retired or parked: name another with \
             --subscription)",
            quoted(group)
        ),
    }))
}

/// What the store holds of `group` (of `subscription` only, when given): the checkpoints, the
/// live leases with their subscription, and the parked entries.
async fn read_store(
    context: &Context<'_>,
    group: &str,
    subscription: Option<&str>,
) -> Result<(Vec<Checkpoint>, Vec<(String, Lease)>, Vec<ParkedEntry>), CliError> {
    let store = context.store;
    let mut checkpoints = store.list(group).await.map_err(|e| failed(&e))?;
    let mut parked = store.parked(group).await.map_err(|e| failed(&e))?;
    let names = match subscription {
        Some(subscription) => {
            checkpoints.retain(|checkpoint| checkpoint.subscription == subscription);
            parked.retain(|entry| entry.subscription == subscription);
            vec![subscription.to_owned()]
        }
        None => {
            let retired = store.retired(group).await.map_err(|e| failed(&e))?;
            sorted_names(
                checkpoints
                    .iter()
                    .map(|checkpoint| checkpoint.subscription.clone())
                    .chain(parked.iter().map(|entry| entry.subscription.clone()))
                    .chain(retired),
            )
        }
    };
    let mut leases = Vec::new();
    for name in names {
        let table = store.leases(group, &name).await.map_err(|e| failed(&e))?;
        leases.extend(table.leases.into_iter().map(|lease| (name.clone(), lease)));
    }
    Ok((checkpoints, leases, parked))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use checkpoint_core::parked::{ParkedEntry, ParkedStore};
    use checkpoint_core::{CheckpointStore, InMemoryCheckpointStore, LeaseStore};

    use super::*;
    use crate::commands::testing::run;
    use crate::error::Exit;

    const HOUR: Duration = Duration::from_secs(3600);

    /// `a`: checkpoints on 0 and 1, `w1` holds 1 and 2, two entries parked on 1; `p`: only a
    /// parked entry, and a lease; `quiet`: only a lease.
    async fn store() -> InMemoryCheckpointStore {
        let store = InMemoryCheckpointStore::new();
        store.save("g", "a", 0, 10).await.unwrap();
        store.save("g", "a", 1, 20).await.unwrap();
        store.acquire("g", "a", "w1", &[1, 2], HOUR).await.unwrap();
        for position in [15, 17] {
            let entry = ParkedEntry::new("a", 1, position, "boom", 5);
            store.park("g", &entry).await.unwrap();
        }
        store
            .park("g", &ParkedEntry::new("p", 0, 3, "e", 1))
            .await
            .unwrap();
        store.acquire("g", "p", "w2", &[5], HOUR).await.unwrap();
        store.acquire("g", "quiet", "w3", &[4], HOUR).await.unwrap();
        store
    }

    #[tokio::test]
    async fn every_partition_with_a_checkpoint_a_lease_or_a_parked_entry() {
        let store = store().await;
        let (result, out, _) = run(&store, false, async |c| {
            status(c, "g", None, false, None).await
        })
        .await;
        result.unwrap();
        let rows: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        let epoch = |row: &Vec<&str>| row[4].parse::<u64>().is_ok();
        assert_eq!(rows.len(), 6, "{out}");
        assert_eq!(rows[1], ["a", "0", "10", "-", "-", "0"], "{out}");
        assert_eq!(rows[2][..4], ["a", "1", "20", "w1"], "{out}");
        assert_eq!(rows[2][5], "2", "{out}");
        assert_eq!(rows[3][..4], ["a", "2", "-", "w1"], "{out}");
        assert_eq!(rows[4], ["p", "0", "-", "-", "-", "1"], "{out}");
        assert_eq!(rows[5][..4], ["p", "5", "-", "w2"], "{out}");
        assert!(rows[2..4].iter().chain(&rows[5..]).all(epoch), "{out}");
    }

    #[tokio::test]
    async fn a_named_subscription_needs_nothing_but_a_lease() {
        let store = store().await;
        let (result, out, _) = run(&store, false, async |c| {
            status(c, "g", Some("quiet"), true, None).await
        })
        .await;
        result.unwrap();
        let value: serde_json::Value = serde_json::from_str(&out).unwrap();
        let partitions = value["partitions"].as_array().unwrap();
        assert_eq!(partitions.len(), 1, "{value}");
        assert_eq!(partitions[0]["owner"], "w3", "{value}");
        assert_eq!(
            partitions[0]["position"],
            serde_json::Value::Null,
            "{value}"
        );
    }

    #[tokio::test]
    async fn nothing_to_show_is_refused_after_printing_what_there_is() {
        let store = store().await;
        let (result, out, _) = run(&store, false, async |c| {
            status(c, "nope", None, true, None).await
        })
        .await;
        let error = result.unwrap_err();
        assert_eq!(error.exit(), Exit::Refused);
        assert!(
            error
                .message()
                .starts_with("no checkpoints, live leases or parked entries in group \"nope\" ("),
            "{}",
            error.message()
        );
        assert_eq!(out, "{\"group\":\"nope\",\"partitions\":[]}\n");
        let (result, out, _) = run(&store, false, async |c| {
            status(c, "g", Some("typo"), false, None).await
        })
        .await;
        assert_eq!(
            result.unwrap_err().message(),
            "no checkpoints, live leases or parked entries for subscription \"typo\" of group \
             \"g\""
        );
        assert_eq!(out, "");
    }
}
