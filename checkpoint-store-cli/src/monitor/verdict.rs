//! What a partition's lag means: a verdict from a window of samples, as Burrow judges a Kafka
//! consumer's offsets, with the evidence that led to it.
//!
//! The rules, in order, on the observations of one partition in the window (oldest first):
//!
//! 1. **caught up**: the latest checkpoint is past the log's head (lag 0), or the log has no
//!    entry in the partition.
//! 2. **stopped**: lag above 0 (or entries and no checkpoint) and no live owner in the latest
//!    sample and the one before it (one sample when there is only one): nobody will move it.
//! 3. **stalled**: lag above 0 in every sample, a live owner, and the checkpoint the same in
//!    the first sample and the latest, over at least two samples. A stuck handler, and a
//!    partition stopped on a poison entry (`OnPoison::Stop`) look the same from the store and
//!    the log: the subscription's own metric `checkpoint_subscription_stopped_on_poison` tells
//!    which.
//! 4. **falling behind**: the checkpoint moves, and the lag grew over the window: above 0 in
//!    every sample (caught up once in the window is keeping up, as in Burrow), the latest above
//!    the first, and the least-squares slope of lag over time above 0.
//! 5. **keeping up**: anything else with lag above 0 (moving, lag not growing; or one sample
//!    only, whose trend needs a second).
//!
//! A window is only as long as its samples: a handler that takes longer than the window per
//! entry looks stalled. `checkpoint check` takes 5 samples 2 s apart by default (8 s); the live
//! view and the page judge their last 10.

use std::fmt;

use serde::Serialize;

/// A partition's verdict, most urgent first (the order the view sorts by).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Lag and no live owner: nobody is reading the partition.
    Stopped,
    /// Lag, a live owner, and a checkpoint that has not moved over the window.
    Stalled,
    /// The checkpoint moves, but the lag grew over the window.
    FallingBehind,
    /// Lag, and the checkpoint moves at least as fast as the log grows.
    KeepingUp,
    /// No lag.
    CaughtUp,
}

impl Verdict {
    /// Every verdict, most urgent first.
    pub const ALL: [Verdict; 5] = [
        Verdict::Stopped,
        Verdict::Stalled,
        Verdict::FallingBehind,
        Verdict::KeepingUp,
        Verdict::CaughtUp,
    ];

    /// Its name in JSON and metrics labels: `stopped`, `stalled`, `falling_behind`,
    /// `keeping_up`, `caught_up`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Stopped => "stopped",
            Verdict::Stalled => "stalled",
            Verdict::FallingBehind => "falling_behind",
            Verdict::KeepingUp => "keeping_up",
            Verdict::CaughtUp => "caught_up",
        }
    }

    /// Its name for people: `falling behind`.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::FallingBehind => "falling behind",
            Verdict::KeepingUp => "keeping up",
            Verdict::CaughtUp => "caught up",
            other => other.as_str(),
        }
    }

    /// Whether an operator should look: stopped, stalled and falling behind.
    pub fn needs_attention(self) -> bool {
        matches!(
            self,
            Verdict::Stopped | Verdict::Stalled | Verdict::FallingBehind
        )
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One sample of one partition: what the store and the log said at one refresh.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Seconds since the monitor started, when the sample was taken.
    pub at: f64,
    /// The checkpoint (the first position not completed), if any.
    pub position: Option<u64>,
    /// The position of the log's last entry in the partition, if any.
    pub head: Option<u64>,
    /// The live lease's owner, if someone holds it.
    pub owner: Option<String>,
}

impl Observation {
    /// `head + 1 - position`; with entries and no checkpoint, `None`; 0 without entries.
    pub fn lag(&self) -> Option<u64> {
        match (self.head, self.position) {
            (None, _) => Some(0),
            (Some(head), Some(position)) => Some(head.saturating_add(1).saturating_sub(position)),
            (Some(_), None) => None,
        }
    }

    /// Whether entries wait: lag above 0, or entries and no checkpoint.
    fn behind(&self) -> bool {
        self.lag() != Some(0)
    }
}

/// A verdict and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The verdict.
    pub verdict: Verdict,
    /// The evidence, one line: the figures the verdict rests on.
    pub evidence: String,
}

/// Judges one partition from its observations in the window, oldest first.
///
/// # Panics
///
/// Never: an empty window is judged caught up ("no sample").
pub fn judge(window: &[Observation]) -> Judgement {
    let Some(latest) = window.last() else {
        return Judgement {
            verdict: Verdict::CaughtUp,
            evidence: "no sample".to_owned(),
        };
    };
    let first = &window[0];
    let span = latest.at - first.at;
    if !latest.behind() {
        return caught_up(latest);
    }
    let previous = window.len().checked_sub(2).map(|i| &window[i]);
    if latest.owner.is_none() && previous.is_none_or(|p| p.owner.is_none()) {
        return Judgement {
            verdict: Verdict::Stopped,
            evidence: format!("no live owner; {}", standing(latest)),
        };
    }
    if window.len() < 2 {
        return Judgement {
            verdict: Verdict::KeepingUp,
            evidence: format!("{}; one sample, its trend needs a second", standing(latest)),
        };
    }
    if latest.owner.is_some()
        && first.position == latest.position
        && window.iter().all(Observation::behind)
    {
        let at = match latest.position {
            Some(position) => format!("checkpoint {position} unchanged"),
            None => "no checkpoint".to_owned(),
        };
        return Judgement {
            verdict: Verdict::Stalled,
            evidence: format!(
                "{at} for {} over {} samples, lag {}, owner {}",
                seconds(span),
                window.len(),
                lag_text(latest),
                latest.owner.as_deref().unwrap_or("-"),
            ),
        };
    }
    moving(window, span)
}

/// Rules 4 and 5: the checkpoint moves (or an owner just came); is the lag growing?
fn moving(window: &[Observation], span: f64) -> Judgement {
    let latest = &window[window.len() - 1];
    let lags: Vec<(f64, f64)> = window
        .iter()
        .filter_map(|o| o.lag().map(|lag| (o.at, lag as f64)))
        .collect();
    let growing = match (lags.first(), lags.last()) {
        (Some(first), Some(last)) => {
            last.1 > first.1
                && window.iter().all(Observation::behind)
                && slope(&lags).is_some_and(|s| s > 0.0)
        }
        _ => false,
    };
    let trend = match (lags.first(), lags.last()) {
        (Some(first), Some(last)) => format!(
            "lag {} → {} over {}",
            first.1 as u64,
            last.1 as u64,
            seconds(span)
        ),
        _ => format!("{} over {}", standing(latest), seconds(span)),
    };
    let handled =
        rate(window).map_or_else(String::new, |r| format!(", handling {}", per_second(r)));
    Judgement {
        verdict: if growing {
            Verdict::FallingBehind
        } else {
            Verdict::KeepingUp
        },
        evidence: format!("{trend}{handled}"),
    }
}

fn caught_up(latest: &Observation) -> Judgement {
    let evidence = match (latest.head, latest.position) {
        (None, _) => "the log has no entry in this partition".to_owned(),
        (Some(head), Some(position)) => format!("checkpoint {position} is past the head {head}"),
        (Some(head), None) => format!("head {head}"),
    };
    Judgement {
        verdict: Verdict::CaughtUp,
        evidence,
    }
}

/// `checkpoint 120, head 154, lag 35` (or `no checkpoint, head 154`).
fn standing(o: &Observation) -> String {
    let head = o.head.map_or_else(|| "-".to_owned(), |h| h.to_string());
    match o.position {
        Some(position) => format!("checkpoint {position}, head {head}, lag {}", lag_text(o)),
        None => format!("no checkpoint, head {head}"),
    }
}

fn lag_text(o: &Observation) -> String {
    o.lag()
        .map_or_else(|| "unknown (no checkpoint)".to_owned(), |l| l.to_string())
}

/// Positions completed per second over the window: the checkpoint's move between the first
/// and the latest sample that have one, divided by the time between them.
pub fn rate(window: &[Observation]) -> Option<f64> {
    speed(window, |o| o.position)
}

/// Positions appended per second over the window (the head's move, measured as [`rate`]).
pub fn arrival(window: &[Observation]) -> Option<f64> {
    speed(window, |o| o.head)
}

/// How fast `value` moved between the first and the latest sample that have it, per second.
fn speed(window: &[Observation], value: fn(&Observation) -> Option<u64>) -> Option<f64> {
    let with: Vec<(f64, u64)> = window
        .iter()
        .filter_map(|o| value(o).map(|v| (o.at, v)))
        .collect();
    let (first, last) = (with.first()?, with.last()?);
    let span = last.0 - first.0;
    (span > 0.0).then(|| last.1.saturating_sub(first.1) as f64 / span)
}

/// Seconds until the lag is 0 at the window's rates: `lag / (handling - arrival)`; 0 when
/// caught up; `None` when the handling is not faster than the arrival (never, at these rates)
/// or a rate is unknown.
pub fn catch_up(window: &[Observation]) -> Option<f64> {
    let lag = window.last()?.lag()?;
    if lag == 0 {
        return Some(0.0);
    }
    let gain = rate(window)? - arrival(window).unwrap_or(0.0);
    (gain > 0.0).then(|| lag as f64 / gain)
}

/// The least-squares slope of `points` (x, y); `None` for fewer than two distinct x.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
    let covariance: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let variance: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    (variance > 0.0).then(|| covariance / variance)
}

/// `18 s`, `2.5 s`.
pub fn seconds(value: f64) -> String {
    if value >= 10.0 {
        format!("{value:.0} s")
    } else {
        format!("{value:.1} s")
    }
}

/// `20/s`, `0.5/s`.
pub fn per_second(value: f64) -> String {
    if value >= 10.0 {
        format!("{value:.0}/s")
    } else {
        format!("{value:.1}/s")
    }
}

#[cfg(test)]
mod tests;
