//! `checkpoint start`: a new subscription at chosen positions.

use std::collections::{BTreeMap, BTreeSet};

use checkpoint_core::Checkpoint;

use super::{Context, count, failed, state_of, subscription_of};
use crate::error::CliError;
use crate::output::write_checkpoints;

/// The most partitions `--partitions` may name, so that a typo (`0..4294967295`) is refused
/// rather than building billions of checkpoints.
pub const MAX_PARTITIONS: usize = 100_000;

/// Where the new subscription starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartFrom {
    /// `--like OLD [--at POSITION] [--at PARTITION=POSITION]...`: the partitions of `old`, at
    /// its positions or all at `at`, then each of `overrides` replacing or adding its partition.
    Like {
        /// The subscription to copy.
        old: String,
        /// One position for every partition of `old`, instead of its own.
        at: Option<u64>,
        /// Single partitions set explicitly.
        overrides: Vec<(u32, u64)>,
    },
    /// `--at POSITION --partitions RANGE`: every partition at one position.
    Partitions {
        /// The partitions.
        partitions: Vec<u32>,
        /// Their position.
        position: u64,
    },
    /// `--at PARTITION=POSITION`, repeated: exactly these.
    Explicit(Vec<(u32, u64)>),
}

/// One `--at` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    Every(u64),
    One(u32, u64),
}

impl StartFrom {
    /// Reads `--like`, `--at` and `--partitions`.
    ///
    /// # Errors
    ///
    /// A usage error for a malformed value or a combination that does not say which
    /// partitions to start, or says it twice.
    pub fn from_args(
        like: Option<&str>,
        at: &[String],
        partitions: Option<&str>,
    ) -> Result<Self, CliError> {
        let at = at
            .iter()
            .map(|value| parse_at(value))
            .collect::<Result<Vec<_>, _>>()?;
        let every: Vec<u64> = at
            .iter()
            .filter_map(|at| match at {
                At::Every(position) => Some(*position),
                At::One(..) => None,
            })
            .collect();
        let ones: Vec<(u32, u64)> = at
            .iter()
            .filter_map(|at| match at {
                At::One(partition, position) => Some((*partition, *position)),
                At::Every(_) => None,
            })
            .collect();
        if every.len() > 1 || (!every.is_empty() && !ones.is_empty()) {
            return Err(CliError::usage(
                "--at takes either one POSITION for every partition, or PARTITION=POSITION \
                 entries, not both and not two positions",
            ));
        }
        let mut seen = BTreeSet::new();
        if let Some((partition, _)) = ones.iter().find(|(partition, _)| !seen.insert(*partition)) {
            return Err(CliError::usage(format!(
                "partition {partition} is given twice in --at"
            )));
        }
        let every = every.first().copied();
        match (like, partitions) {
            (Some(_), Some(_)) => Err(CliError::usage(
                "--like and --partitions both choose the partitions: give one of them",
            )),
            (Some(old), None) => Ok(StartFrom::Like {
                old: old.to_owned(),
                at: every,
                overrides: ones,
            }),
            (None, Some(spec)) => match every {
                Some(position) => Ok(StartFrom::Partitions {
                    partitions: parse_partitions(spec)?,
                    position,
                }),
                None => Err(CliError::usage(
                    "--partitions needs --at POSITION, the position they start at",
                )),
            },
            (None, None) if every.is_some() => Err(CliError::usage(
                "--at POSITION needs the partitions: --like OLD (its partitions) or \
                 --partitions 0..N",
            )),
            (None, None) if !ones.is_empty() => Ok(StartFrom::Explicit(ones)),
            (None, None) => Err(CliError::usage(
                "start needs where to start: --like OLD, --at POSITION with --like OLD or \
                 --partitions 0..N, or --at PARTITION=POSITION",
            )),
        }
    }
}

/// Creates `subscription` of `group` where `from` says, then prints what it created.
///
/// # Errors
///
/// Refused (exit code 3) when `--like` names a subscription without checkpoints, or when the
/// store refuses the name (it has checkpoints, or is retired); a usage error for an invalid
/// name or position; the store's error.
pub async fn start(
    context: Context<'_>,
    group: &str,
    subscription: &str,
    from: &StartFrom,
) -> Result<(), CliError> {
    let positions: Vec<(u32, u64)> = match from {
        StartFrom::Explicit(positions) => positions.clone(),
        StartFrom::Partitions {
            partitions,
            position,
        } => partitions.iter().map(|&p| (p, *position)).collect(),
        StartFrom::Like { old, at, overrides } => {
            let (live, retired) = state_of(context.store, group, old).await?;
            if live.is_empty() {
                let why = if retired { " (it is retired)" } else { "" };
                return Err(CliError::refused(format!(
                    "nothing to copy: {} has no checkpoints{why}",
                    subscription_of(group, old)
                )));
            }
            let mut positions: BTreeMap<u32, u64> = live
                .iter()
                .map(|c| (c.partition, at.unwrap_or(c.position)))
                .collect();
            positions.extend(overrides.iter().copied());
            positions.into_iter().collect()
        }
    };
    context
        .store
        .start_at(group, subscription, &positions)
        .await
        .map_err(|e| failed(&e))?;
    let mut created: Vec<Checkpoint> = positions
        .iter()
        .map(|&(partition, position)| Checkpoint::new(subscription, partition, position))
        .collect();
    crate::output::sort(&mut created);
    writeln!(
        context.out,
        "started {} with {}",
        subscription_of(group, subscription),
        count(created.len())
    )?;
    write_checkpoints(context.out, &created)?;
    Ok(())
}

fn parse_at(value: &str) -> Result<At, CliError> {
    let malformed = || {
        CliError::usage(format!(
            "--at {value:?}: expected POSITION or PARTITION=POSITION, in decimal"
        ))
    };
    match value.split_once('=') {
        Some((partition, position)) => Ok(At::One(
            partition.trim().parse().map_err(|_| malformed())?,
            position.trim().parse().map_err(|_| malformed())?,
        )),
        None => Ok(At::Every(value.trim().parse().map_err(|_| malformed())?)),
    }
}

/// `0..16`, `0..=15`, `3`, `0,3,7`.
fn parse_partitions(spec: &str) -> Result<Vec<u32>, CliError> {
    let malformed = || {
        CliError::usage(format!(
            "--partitions {spec:?}: expected a range (0..16 or 0..=15) or a list (0,3,7)"
        ))
    };
    let number = |text: &str| text.trim().parse::<u32>().map_err(|_| malformed());
    let none = || CliError::usage(format!("--partitions {spec:?} names no partition"));
    let (start, last) = if let Some((start, last)) = spec.split_once("..=") {
        (number(start)?, number(last)?)
    } else if let Some((start, end)) = spec.split_once("..") {
        let (start, end) = (number(start)?, number(end)?);
        (start, end.checked_sub(1).ok_or_else(none)?)
    } else {
        let mut partitions = spec.split(',').map(number).collect::<Result<Vec<_>, _>>()?;
        partitions.sort_unstable();
        partitions.dedup();
        return Ok(partitions);
    };
    if start > last {
        return Err(none());
    }
    if (last - start) as usize >= MAX_PARTITIONS {
        return Err(CliError::usage(format!(
            "--partitions {spec:?} names more than {MAX_PARTITIONS} partitions"
        )));
    }
    Ok((start..=last).collect())
}

#[cfg(test)]
mod tests;
