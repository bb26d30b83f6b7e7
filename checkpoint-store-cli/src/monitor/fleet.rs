//! The monitor's memory across refreshes: each partition's window of samples, its owner
//! changes, and each subscription's lag over time; and the report it makes of them.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::report::{PartitionHistory, PartitionReport, Report, Requests, SubscriptionHistory};
use super::snapshot::Snapshot;
use super::verdict::{Observation, catch_up, judge, rate};
use crate::output::status::PartitionStatus;

/// How the monitor samples and judges.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Time between refreshes.
    pub interval: Duration,
    /// How many samples a verdict is judged from (at least 2 to see movement).
    pub window: usize,
    /// How many samples the lag-over-time history keeps per subscription.
    pub history: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(2),
            window: 10,
            history: 300,
        }
    }
}

/// One partition's samples and owner changes.
#[derive(Debug, Default)]
struct Track {
    window: VecDeque<Observation>,
    lease: Option<(String, u64)>,
    owner_changes: u64,
    latest: PartitionStatus,
    seen_at: u64,
}

/// One subscription's lag over time.
#[derive(Debug, Default)]
struct History {
    at: VecDeque<f64>,
    lags: BTreeMap<u32, VecDeque<Option<u64>>>,
}

/// The monitor's state: feed it each refresh's [`Snapshot`], ask it for the [`Report`].
#[derive(Debug)]
pub struct Fleet {
    group: String,
    settings: Settings,
    started: Instant,
    tracks: BTreeMap<(String, u32), Track>,
    histories: BTreeMap<String, History>,
    refreshes: u64,
    taken_at_ms: u64,
    requests: Requests,
    error: Option<String>,
}

impl Fleet {
    /// A monitor of `group` with nothing seen yet.
    pub fn new(group: &str, settings: Settings) -> Self {
        Self {
            group: group.to_owned(),
            settings: Settings {
                window: settings.window.max(1),
                history: settings.history.max(1),
                ..settings
            },
            started: Instant::now(),
            tracks: BTreeMap::new(),
            histories: BTreeMap::new(),
            refreshes: 0,
            taken_at_ms: 0,
            requests: Requests::default(),
            error: None,
        }
    }

    /// Its settings.
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// Adds a refresh's snapshot, taken now.
    pub fn record(&mut self, snapshot: Snapshot) {
        let at = self.started.elapsed().as_secs_f64();
        self.refreshes += 1;
        self.taken_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        self.requests = snapshot.requests;
        self.error = None;
        for status in snapshot.listing.partitions {
            let key = (status.subscription.clone(), status.partition);
            let track = self.tracks.entry(key).or_default();
            // A partition seen again after a gap starts a new window: its old samples would
            // judge across the time it was not shown.
            // (A partition first seen now changed no owner: it had none to change from.)
            if track.seen_at == 0 || track.seen_at + 1 != self.refreshes {
                track.window.clear();
            } else if track.lease != status.lease {
                track.owner_changes += 1;
            }
            track.seen_at = self.refreshes;
            track.lease.clone_from(&status.lease);
            track.window.push_back(Observation {
                at,
                position: status.position,
                head: status.head,
                owner: status.lease.as_ref().map(|(owner, _)| owner.clone()),
            });
            while track.window.len() > self.settings.window {
                track.window.pop_front();
            }
            track.latest = status;
        }
        self.record_history(at);
    }

    /// Records that a refresh failed: the report keeps the figures before it and says why.
    pub fn record_error(&mut self, error: String) {
        self.error = Some(error);
    }

    fn record_history(&mut self, at: f64) {
        let refreshes = self.refreshes;
        let limit = self.settings.history;
        for ((subscription, partition), track) in &self.tracks {
            if track.seen_at != refreshes {
                continue;
            }
            let history = self.histories.entry(subscription.clone()).or_default();
            if history.at.back() != Some(&at) {
                history.at.push_back(at);
                for lags in history.lags.values_mut() {
                    lags.push_back(None);
                }
            }
            let width = history.at.len();
            let lags = history.lags.entry(*partition).or_default();
            lags.resize(width - 1, None);
            lags.push_back(track.window.back().and_then(Observation::lag));
        }
        for history in self.histories.values_mut() {
            while history.at.len() > limit {
                history.at.pop_front();
                for lags in history.lags.values_mut() {
                    lags.pop_front();
                }
            }
        }
    }

    /// The report of the latest refresh: every partition it showed, what needs attention first.
    pub fn report(&self) -> Report {
        let mut partitions: Vec<PartitionReport> = self
            .tracks
            .values()
            .filter(|track| track.seen_at == self.refreshes)
            .map(partition_report)
            .collect();
        partitions.sort_by(|a, b| {
            (a.verdict, std::cmp::Reverse(a.lag.unwrap_or(u64::MAX)))
                .cmp(&(b.verdict, std::cmp::Reverse(b.lag.unwrap_or(u64::MAX))))
                .then_with(|| a.subscription.as_bytes().cmp(b.subscription.as_bytes()))
                .then(a.partition.cmp(&b.partition))
        });
        Report {
            group: self.group.clone(),
            taken_at_ms: self.taken_at_ms,
            uptime_s: self.started.elapsed().as_secs_f64(),
            interval_s: self.settings.interval.as_secs_f64(),
            window_samples: self.settings.window,
            refreshes: self.refreshes,
            error: self.error.clone(),
            requests: self.requests,
            partitions,
            history: self.histories(),
        }
    }

    fn histories(&self) -> Vec<SubscriptionHistory> {
        self.histories
            .iter()
            .map(|(subscription, history)| SubscriptionHistory {
                subscription: subscription.clone(),
                at_s: history.at.iter().copied().collect(),
                partitions: history
                    .lags
                    .iter()
                    .map(|(partition, lags)| {
                        let mut lag: Vec<Option<u64>> = lags.iter().copied().collect();
                        lag.resize(history.at.len(), None);
                        PartitionHistory {
                            partition: *partition,
                            lag,
                        }
                    })
                    .collect(),
            })
            .collect()
    }
}

fn partition_report(track: &Track) -> PartitionReport {
    let window: Vec<Observation> = track.window.iter().cloned().collect();
    let judgement = judge(&window);
    let status = &track.latest;
    PartitionReport {
        subscription: status.subscription.clone(),
        partition: status.partition,
        owner: status.lease.as_ref().map(|(owner, _)| owner.clone()),
        epoch: status.lease.as_ref().map(|(_, epoch)| *epoch),
        position: status.position,
        head: status.head,
        lag: window.last().and_then(Observation::lag),
        parked: status.parked,
        rate: rate(&window),
        catch_up_s: catch_up(&window),
        owner_changes: track.owner_changes,
        verdict: judgement.verdict,
        evidence: judgement.evidence,
    }
}

#[cfg(test)]
mod tests;
