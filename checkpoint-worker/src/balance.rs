//! The balancing rule: from what the store says (live leases, live owners) and what this worker
//! holds, which free partitions to claim, which to ask other owners for, and which of its own to
//! hand over. A pure function, so the model test and the unit tests can check it alone.
//!
//! With `P` partitions and `N` live owners, every owner should hold `⌊P/N⌋` or `⌈P/N⌉`, and at
//! most `P mod N` owners hold the larger share. Each worker decides for itself, from the same
//! table, and only ever moves itself towards its share:
//!
//! - below `⌊P/N⌋`, it wants `⌊P/N⌋`; at `⌊P/N⌋`, it wants one more only while fewer than
//!   `P mod N` other owners hold `⌈P/N⌉` or more (so the extra slots are never over-taken)
//!   and no other owner is below `⌊P/N⌋` (what goes free then was released for that one);
//! - it claims free partitions first (free, expired, or released: the store grants them without
//!   asking anyone);
//! - what free partitions cannot cover, it **asks** for (`request_handover`), from owners above
//!   `⌈P/N⌉` first, then, only when it is below `⌊P/N⌋`, from owners at `⌈P/N⌉`: never stealing
//!   a live lease; its requests still waiting on an owner that can honour them count towards
//!   what it needs, so a slow owner does not make it ask the others for more;
//! - it hands over a partition asked of it only while it holds more than `⌊P/N⌋` (not counting
//!   the ones already being handed over), so honouring a request never takes it below its share,
//!   and only to a live requester holding at least two fewer than it would keep: a request mark
//!   stays on a lease until a grant or a release clears it, so it may be stale.
//!
//! Nobody moves a partition fair share does not require: a worker at its share neither claims
//! nor asks, and the partitions of a worker that joins come from the owners above their share.

use std::collections::{BTreeMap, BTreeSet};

use checkpoint_core::{Lease, LeaseTable};

/// What this worker knows of itself for the plan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Me<'a> {
    /// Its owner id.
    pub id: &'a str,
    /// Partitions `0..partitions` make up the subscription.
    pub partitions: u32,
    /// Partitions it holds and keeps (not being handed over).
    pub keeping: &'a BTreeSet<u32>,
    /// Partitions it holds that are being handed over (they leave soon).
    pub leaving: &'a BTreeSet<u32>,
    /// Partitions of its own on which another owner asked for a handover, with the requester.
    pub requested: &'a BTreeMap<u32, String>,
}

/// What to do this round.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Free partitions to acquire.
    pub claim: Vec<u32>,
    /// Partitions of other owners to ask for.
    pub ask: Vec<u32>,
    /// Partitions of its own to hand over, as asked.
    pub give: Vec<u32>,
    /// The share this worker aims at.
    pub target: usize,
}

/// Fair shares for `partitions` over `owners`: (`⌊P/N⌋`, `⌈P/N⌉`, how many may hold `⌈P/N⌉`).
pub(crate) fn shares(partitions: u32, owners: usize) -> (usize, usize, usize) {
    let partitions = partitions as usize;
    let owners = owners.max(1);
    let floor = partitions / owners;
    let extra = partitions % owners;
    (floor, floor + usize::from(extra > 0), extra)
}

/// The live owners of `table`, and `me` (which has joined, whether or not the table read
/// shows it yet).
pub(crate) fn live_owners<'a>(table: &'a LeaseTable, me: &'a str) -> BTreeSet<&'a str> {
    let mut owners: BTreeSet<&str> = table.owners.iter().map(|o| o.owner.as_str()).collect();
    owners.insert(me);
    owners
}

/// The leases of `table` whose owner is in `owners` (from [`live_owners`]): the partitions
/// held. A lease whose owner is not live counts for nobody and is claimable: where the store
/// has no clock (DynamoDB), the table lists a dead owner's leases until they are taken, and
/// the acquire is what proves them expired.
pub(crate) fn held_live<'a>(
    table: &'a LeaseTable,
    owners: &'a BTreeSet<&str>,
) -> impl Iterator<Item = &'a Lease> {
    table
        .leases
        .iter()
        .filter(|lease| owners.contains(lease.owner.as_str()))
}

/// The plan for this round. `rotation` spreads concurrent claimers over the free partitions
/// (each starts at its own offset), so that workers that see the same free partitions at the
/// same time mostly claim different ones.
pub(crate) fn plan(me: Me<'_>, table: &LeaseTable, rotation: usize) -> Plan {
    let owners = live_owners(table, me.id);
    let (floor, ceil, extra) = shares(me.partitions, owners.len());

    // Other live owners' counts, from the table (see `held_live` for leases of owners that
    // are not live).
    let mut counts: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    let mut taken = BTreeSet::new();
    for lease in held_live(table, &owners) {
        taken.insert(lease.partition);
        if lease.owner != me.id {
            counts
                .entry(&lease.owner)
                .or_default()
                .push(lease.partition);
        }
    }
    let mine = me.keeping.len();
    let others_at_ceil = counts.values().filter(|held| held.len() >= ceil).count();
    // While another owner is below its floor, the partitions going free are the ones released
    // for it (a handover clears its request mark): taking one as an extra slot would send it
    // asking again, and move more than its share requires.
    let others_below_floor = owners
        .iter()
        .any(|&owner| owner != me.id && counts.get(owner).map_or(0, Vec::len) < floor);
    let target = if mine < floor {
        floor
    } else if mine == floor && extra > 0 && others_at_ceil < extra && !others_below_floor {
        ceil
    } else {
        mine
    };

    let give = to_give(me, floor, &owners, &counts);
    let need = target.saturating_sub(mine);
    let free: Vec<u32> = (0..me.partitions)
        .filter(|p| !taken.contains(p) && !me.keeping.contains(p) && !me.leaving.contains(p))
        .collect();
    let claim = rotate(&free, rotation)
        .into_iter()
        .take(need)
        .collect::<Vec<_>>();
    let ask = if claim.len() < need {
        to_ask(
            need - claim.len(),
            (floor, ceil),
            mine < floor,
            &counts,
            table,
            me.id,
        )
    } else {
        Vec::new()
    };
    Plan {
        claim,
        ask,
        give,
        target,
    }
}

/// The requested partitions this worker hands over: as many as keep it at `floor` or above,
/// and only to a live requester that still holds at least two fewer than this worker would
/// keep. A request mark stays on a lease until a grant or a release clears it, so a request
/// its requester no longer needs (it got its share elsewhere, or left) must not move a
/// partition when this worker later goes above its floor.
fn to_give(
    me: Me<'_>,
    floor: usize,
    owners: &BTreeSet<&str>,
    counts: &BTreeMap<&str, Vec<u32>>,
) -> Vec<u32> {
    let mut keeping = me.keeping.len();
    let mut given: BTreeMap<&str, usize> = BTreeMap::new();
    let mut give = Vec::new();
    for (partition, requester) in me.requested {
        let requester = requester.as_str();
        if !me.keeping.contains(partition) || requester == me.id || keeping <= floor {
            continue;
        }
        let theirs =
            counts.get(requester).map_or(0, Vec::len) + given.get(requester).copied().unwrap_or(0);
        if owners.contains(requester) && theirs + 2 <= keeping {
            give.push(*partition);
            keeping -= 1;
            *given.entry(requester).or_default() += 1;
        }
    }
    give
}

/// Partitions to ask for: first its requests still waiting on an owner that can honour them
/// (above `floor` while this worker is below it, else above `ceil`), asked again (the request
/// may have been cleared by a grant; asking is idempotent) and counted towards the need, so
/// that a slow owner does not make it ask others for more than its share; then from the owners
/// above `ceil` (the most loaded first, their surplus only), then, when this worker is below
/// its floor, one from each owner at `ceil`.
fn to_ask(
    mut need: usize,
    (floor, ceil): (usize, usize),
    below_floor: bool,
    counts: &BTreeMap<&str, Vec<u32>>,
    table: &LeaseTable,
    me: &str,
) -> Vec<u32> {
    let mut by_load: Vec<(&str, &Vec<u32>)> = counts.iter().map(|(o, h)| (*o, h)).collect();
    by_load.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
    let requested_by = |partition: u32| {
        table
            .leases
            .iter()
            .find(|lease| lease.partition == partition)
            .and_then(|lease| lease.handover_requested_by.as_deref())
    };
    // Partitions another requester already asked for are left to it, unless nothing else is
    // left: two workers asking for the same partition would make one of them wait a round.
    let asked_by_other = |partition: u32| requested_by(partition).is_some_and(|r| r != me);
    let bar = if below_floor { floor } else { ceil };
    let mut ask: Vec<u32> = by_load
        .iter()
        .filter(|(_, held)| held.len() > bar)
        .flat_map(|(_, held)| held.iter().copied())
        .filter(|&partition| requested_by(partition) == Some(me))
        .take(need)
        .collect();
    need -= ask.len();
    for (_, held) in by_load.iter().filter(|(_, held)| held.len() > ceil) {
        let asked = held.iter().filter(|p| ask.contains(p)).count();
        let surplus = (held.len() - ceil).saturating_sub(asked);
        let picks = preferring_unasked(held, &asked_by_other);
        let fresh: Vec<u32> = picks.into_iter().filter(|p| !ask.contains(p)).collect();
        for partition in fresh.into_iter().take(surplus.min(need)) {
            ask.push(partition);
            need -= 1;
        }
    }
    if below_floor {
        for (_, held) in by_load.iter().filter(|(_, held)| held.len() == ceil) {
            if need == 0 {
                break;
            }
            if held.iter().any(|p| ask.contains(p)) {
                continue;
            }
            if let Some(&partition) = preferring_unasked(held, &asked_by_other).first() {
                ask.push(partition);
                need -= 1;
            }
        }
    }
    ask.sort_unstable();
    ask
}

/// `held` from the highest partition down, the ones no other requester asked for first: a
/// mark stays on a lease until a grant or a release clears it, so the marked ones may be
/// stale requests their requester no longer needs (asking replaces the mark).
fn preferring_unasked(held: &[u32], asked_by_other: &impl Fn(u32) -> bool) -> Vec<u32> {
    let (unasked, asked): (Vec<u32>, Vec<u32>) = held
        .iter()
        .rev()
        .partition(|&&partition| !asked_by_other(partition));
    unasked.into_iter().chain(asked).collect()
}

/// `items` starting at `offset` (modulo its length), wrapping around.
fn rotate(items: &[u32], offset: usize) -> Vec<u32> {
    if items.is_empty() {
        return Vec::new();
    }
    let start = offset % items.len();
    items[start..]
        .iter()
        .chain(&items[..start])
        .copied()
        .collect()
}

#[cfg(test)]
mod tests;
