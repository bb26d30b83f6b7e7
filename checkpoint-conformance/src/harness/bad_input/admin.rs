//! The bad-input driver over the operations API: `start_at`, `retire`, `retired` and `purge`
//! with arbitrary arguments, invalid ones refused before any request, valid ones done and read
//! back.

use std::collections::HashSet;
use std::fmt;

use checkpoint_core::{Argument, CheckpointAdmin, Error};
use proptest::strategy::{Strategy, ValueTree};

use super::BadInputReport;
use super::driver::fresh_within_limit;
use crate::failure::error_chain;
use crate::history::{HistoryConfig, seeded_runner};
use crate::inputs::{first_invalid, inputs, valid_name};
use crate::round_trips::CountingProxy;
use crate::{Failure, fresh_group};

/// Fails with a formatted message unless `condition` holds.
macro_rules! check {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(Failure::new(format!($($message)+)));
        }
    };
}

/// Runs generated arguments through the operations API of a store.
///
/// Each case calls `start_at` (its positions from the generated partition, position and
/// batch, some cases with a partition named twice or no positions at all), `retired`, and
/// `retire` then `purge` of a name of its own. A call that must be refused (group, then
/// subscription, then no positions, then the first entry whose position is above `i64::MAX`
/// or whose partition came before) must be refused with the invalid-input error naming that
/// argument and entry, and leave the proxy's count where it was; a valid one must cost at
/// least one round trip and do what the contract says (`start_at` creates every position,
/// `retire` makes the name retired and a save under it ignored, `purge` frees it).
pub struct BadAdminInput<'a> {
    store: &'a dyn CheckpointAdmin,
    proxy: Option<&'a CountingProxy>,
    cases: u32,
    seed: u64,
}

impl fmt::Debug for BadAdminInput<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BadAdminInput")
            .field("counted", &self.proxy.is_some())
            .field("cases", &self.cases)
            .field("seed", &self.seed)
            .finish()
    }
}

/// How a call must be refused: the argument and, for a position, its entry.
type Refusal = (Argument, Option<usize>);

impl<'a> BadAdminInput<'a> {
    /// The driver over `store`, whose requests all go through `proxy` (warm the store up
    /// first: a refused call must cost no round trip).
    pub fn new(store: &'a dyn CheckpointAdmin, proxy: &'a CountingProxy) -> Self {
        Self {
            proxy: Some(proxy),
            ..Self::uncounted(store)
        }
    }

    /// The driver over a store with no wire to count: the same calls and checks.
    pub fn uncounted(store: &'a dyn CheckpointAdmin) -> Self {
        let config = HistoryConfig::from_env();
        Self {
            store,
            proxy: None,
            cases: config.cases.clamp(64, 256),
            seed: config.seed,
        }
    }

    /// `CHECKPOINT_HISTORIES` cases, kept within `min..=max`.
    pub fn cases_between(mut self, min: u32, max: u32) -> Self {
        self.cases = HistoryConfig::from_env().cases.clamp(min, max);
        self
    }

    fn round_trips(&self) -> u64 {
        self.proxy.map(CountingProxy::round_trips).unwrap_or(0)
    }

    /// Runs every case; the failure names the case, the call and the seed to replay it.
    pub async fn run(self) -> Result<BadInputReport, Failure> {
        let mut runner = seeded_runner(self.cases, self.seed);
        let strategy = inputs();
        let base = fresh_group("bad-admin-input");
        let mut report = BadInputReport {
            cases: self.cases,
            seed: self.seed,
            refused: 0,
            performed: 0,
        };
        for case in 0..self.cases {
            let inputs = strategy
                .new_tree(&mut runner)
                .map_err(|reason| Failure::new(format!("generating inputs: {reason}")))?
                .current();
            let group = if valid_name(&inputs.group) {
                fresh_within_limit(&format!("{base}/{case}/"), &inputs.group)
            } else {
                inputs.group.clone()
            };
            let mut positions: Vec<(u32, u64)> =
                std::iter::once((inputs.partition, inputs.position))
                    .chain(inputs.batch.iter().map(|(_, p, position)| (*p, *position)))
                    .collect();
            match case % 6 {
                0 => positions.push((inputs.partition, 0)),
                1 => positions.clear(),
                _ => {}
            }
            self.case(&group, &inputs.subscription, &positions, &mut report)
                .await
                .map_err(|failure| {
                    Failure::new(format!(
                        "{failure}\n  in case {case} (CHECKPOINT_SEED={}): group {group:?}, \
                         subscription {:?}, positions {positions:?}",
                        self.seed, inputs.subscription
                    ))
                })?;
        }
        eprintln!("operations API {report}");
        check!(
            report.refused > 0 && report.performed > 0,
            "the generator should produce both kinds of input: {report}"
        );
        Ok(report)
    }

    /// One generated case: `start_at`, `retired`, then `retire` and `purge` of a name of its
    /// own, each judged against the refusal it must meet and, when done, read back.
    async fn case(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
        report: &mut BadInputReport,
    ) -> Result<(), Failure> {
        let started = self
            .start_at_and_read_back(group, subscription, positions, report)
            .await?;
        self.retired_of_untouched_group(group, report).await?;
        self.retire_and_purge_own_name(group, subscription, report)
            .await?;
        if started {
            // The started subscription is live: a purge of it is refused.
            check!(
                matches!(
                    self.store.purge(group, subscription).await,
                    Err(Error::NotRetired { .. })
                ),
                "purge of the live subscription {subscription:?} was not refused as not retired"
            );
        }
        Ok(())
    }

    /// `start_at`, judged, then every position read back when it was done; `Ok(true)` when it
    /// was done, so that the subscription is live.
    async fn start_at_and_read_back(
        &self,
        group: &str,
        subscription: &str,
        positions: &[(u32, u64)],
        report: &mut BadInputReport,
    ) -> Result<bool, Failure> {
        let store = self.store;
        let before = self.round_trips();
        let result = store.start_at(group, subscription, positions).await;
        let started = self.judge(
            "start_at",
            start_at_refusal(group, subscription, positions),
            result,
            before,
            report,
        )?;
        if started {
            for &(partition, position) in positions {
                let loaded = store.load(group, subscription, partition).await?;
                check!(
                    loaded == Some(position),
                    "load of partition {partition} after start_at returned {loaded:?}, not {position}"
                );
            }
        }
        Ok(started)
    }

    /// `retired`, judged; when done it must list nothing, as nothing was retired yet.
    async fn retired_of_untouched_group(
        &self,
        group: &str,
        report: &mut BadInputReport,
    ) -> Result<(), Failure> {
        let before = self.round_trips();
        let result = self.store.retired(group).await;
        let listed = result.as_ref().ok().cloned();
        if self.judge(
            "retired",
            first_invalid(group, None, &[]).map(|a| (a, None)),
            result.map(drop),
            before,
            report,
        )? {
            check!(
                listed == Some(Vec::new()),
                "retired() of a group where nothing was retired returned {listed:?}"
            );
        }
        Ok(())
    }

    /// `retire` then `purge`, judged, under a name of their own (as long as the generated one
    /// near the limit, but never the started one): a retired name is listed and a save under it
    /// ignored, a purged one is listed no more.
    async fn retire_and_purge_own_name(
        &self,
        group: &str,
        subscription: &str,
        report: &mut BadInputReport,
    ) -> Result<(), Failure> {
        let store = self.store;
        let own = fresh_within_limit("retired/", subscription);
        let name = if valid_name(subscription) {
            own.as_str()
        } else {
            subscription
        };
        let refusal = first_invalid(group, Some(name), &[]).map(|a| (a, None));
        let before = self.round_trips();
        let result = store.retire(group, name).await;
        if self.judge("retire", refusal, result, before, report)? {
            let retired = store.retired(group).await?;
            check!(
                retired == [name],
                "retired() after retiring {name:?} returned {retired:?}"
            );
            store.save(group, name, 0, 1).await?;
            let loaded = store.load(group, name, 0).await?;
            check!(
                loaded.is_none(),
                "a save under retired {name:?} was not ignored: load returned {loaded:?}"
            );
        }
        let before = self.round_trips();
        let result = store.purge(group, name).await;
        if self.judge("purge", refusal, result, before, report)? {
            let retired = store.retired(group).await?;
            check!(
                retired.is_empty(),
                "retired() after purging {name:?} returned {retired:?}"
            );
        }
        Ok(())
    }

    /// Checks one call against the refusal it must meet; `Ok(true)` when it was valid and done.
    fn judge(
        &self,
        name: &str,
        refusal: Option<Refusal>,
        result: Result<(), Error>,
        before: u64,
        report: &mut BadInputReport,
    ) -> Result<bool, Failure> {
        let trips = self.round_trips() - before;
        match (refusal, result) {
            (Some((argument, index)), Err(Error::InvalidInput(invalid))) => {
                check!(
                    invalid.argument == argument,
                    "{name} refused its {} instead of its {argument}",
                    invalid.argument
                );
                check!(
                    index.is_none() || invalid.batch_index == index,
                    "{name} named entry {:?}, not the first invalid one, {index:?}",
                    invalid.batch_index
                );
                check!(trips == 0, "{name} sent a request for invalid input");
                report.refused += 1;
                Ok(false)
            }
            (Some((argument, _)), other) => Err(Failure::new(format!(
                "{name} should be refused for its {argument}, got {other:?}"
            ))),
            (None, Ok(())) => {
                check!(
                    self.proxy.is_none() || trips >= 1,
                    "{name} of valid input made no request"
                );
                report.performed += 1;
                Ok(true)
            }
            (None, Err(error)) => Err(Failure::new(format!(
                "{name} of valid input failed: {}",
                error_chain(&error)
            ))),
        }
    }
}

/// The refusal the contract asks of `start_at`: the group, the subscription, no positions,
/// then the first entry whose position is invalid or whose partition came before.
fn start_at_refusal(group: &str, subscription: &str, positions: &[(u32, u64)]) -> Option<Refusal> {
    if let Some(argument) = first_invalid(group, Some(subscription), &[]) {
        return Some((argument, None));
    }
    if positions.is_empty() {
        return Some((Argument::Positions, None));
    }
    let mut seen = HashSet::new();
    positions
        .iter()
        .enumerate()
        .find_map(|(index, &(partition, position))| {
            if first_invalid(group, None, &[(Argument::Position, position)]).is_some() {
                Some((Argument::Position, Some(index)))
            } else if !seen.insert(partition) {
                Some((Argument::Partition, Some(index)))
            } else {
                None
            }
        })
}
