//! One refresh's reading of the store and the log: the same figures as `status`, with a fixed
//! number of requests whatever the partition count.

use std::collections::BTreeSet;

use checkpoint_core::source::Source;

use super::report::Requests;
use crate::commands::failed;
use crate::connect::StoreApi;
use crate::error::CliError;
use crate::output::status::StatusListing;
use crate::source::{SourceSpec, read_heads};

/// What one refresh read.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Every partition with a checkpoint, a live lease or a parked entry, with its head.
    pub listing: StatusListing,
    /// The requests it took.
    pub requests: Requests,
}

/// Reads a group's store and log, refresh after refresh.
///
/// Each refresh: one request for the group's checkpoints, one for its parked entries, one per
/// subscription for its leases, and one call of the log's `heads` for every shown partition.
/// The log is opened at the first refresh that shows a partition (with the partition count it
/// stores, or one more than the highest shown partition), and kept open.
pub struct Sampler<'a> {
    store: &'a dyn StoreApi,
    group: &'a str,
    subscription: Option<&'a str>,
    spec: &'a SourceSpec,
    source: Option<Box<dyn Source>>,
    /// Every subscription seen so far: its leases are read at every refresh, so that a
    /// subscription whose every process died still shows its partitions, with no owner.
    known: BTreeSet<String>,
}

impl<'a> Sampler<'a> {
    /// Reads `group` (only `subscription`, when given) of `store`, and the log `spec` names.
    pub fn new(
        store: &'a dyn StoreApi,
        group: &'a str,
        subscription: Option<&'a str>,
        spec: &'a SourceSpec,
    ) -> Self {
        Self {
            store,
            group,
            subscription,
            spec,
            source: None,
            known: subscription.into_iter().map(str::to_owned).collect(),
        }
    }

    /// One refresh.
    ///
    /// # Errors
    ///
    /// The store's or the log's error (the next refresh tries again).
    pub async fn read(&mut self) -> Result<Snapshot, CliError> {
        let (mut listing, mut requests) = self.read_store().await?;
        let partitions = listing.partition_numbers();
        if let Some(highest) = partitions.last() {
            let source = match &mut self.source {
                Some(source) => source,
                empty => empty.insert(self.spec.open(highest.saturating_add(1)).await?),
            };
            let heads = read_heads(
                source.as_ref(),
                partitions,
                self.spec.timeout(),
                &self.spec.context(),
            )
            .await?;
            requests.source += 1;
            listing.set_heads(&heads);
        }
        Ok(Snapshot { listing, requests })
    }

    async fn read_store(&mut self) -> Result<(StatusListing, Requests), CliError> {
        let store = self.store;
        let mut checkpoints = store.list(self.group).await.map_err(|e| failed(&e))?;
        let mut parked = store.parked(self.group).await.map_err(|e| failed(&e))?;
        let mut requests = Requests {
            store: 2,
            source: 0,
        };
        if let Some(only) = self.subscription {
            checkpoints.retain(|c| c.subscription == only);
            parked.retain(|e| e.subscription == only);
        }
        self.known
            .extend(checkpoints.iter().map(|c| c.subscription.clone()));
        self.known
            .extend(parked.iter().map(|e| e.subscription.clone()));
        let mut leases = Vec::new();
        for name in &self.known {
            let table = store
                .leases(self.group, name)
                .await
                .map_err(|e| failed(&e))?;
            requests.store += 1;
            leases.extend(table.leases.into_iter().map(|lease| (name.clone(), lease)));
        }
        let listing = StatusListing::new(self.group, &checkpoints, &leases, &parked);
        Ok((listing, requests))
    }
}
