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
mod tests {
    use checkpoint_core::{Lease, LeaseOwner};

    use super::*;

    fn table(leases: &[(u32, &str)], owners: &[&str], asked: &[(u32, &str)]) -> LeaseTable {
        LeaseTable {
            leases: leases
                .iter()
                .map(|&(partition, owner)| Lease {
                    partition,
                    owner: owner.to_owned(),
                    epoch: 1,
                    time_left: None,
                    handover_requested_by: asked
                        .iter()
                        .find(|(p, _)| *p == partition)
                        .map(|(_, r)| (*r).to_owned()),
                })
                .collect(),
            owners: owners
                .iter()
                .map(|owner| LeaseOwner {
                    owner: (*owner).to_owned(),
                    time_left: None,
                })
                .collect(),
        }
    }

    fn plan_for(
        id: &str,
        partitions: u32,
        keeping: &[u32],
        requested: &[(u32, &str)],
        table: &LeaseTable,
    ) -> Plan {
        plan_leaving(id, partitions, (keeping, &[]), requested, table)
    }

    /// [`plan_for`] a worker that also holds `leaving`, partitions being handed over.
    fn plan_leaving(
        id: &str,
        partitions: u32,
        (keeping, leaving): (&[u32], &[u32]),
        requested: &[(u32, &str)],
        table: &LeaseTable,
    ) -> Plan {
        let keeping: BTreeSet<u32> = keeping.iter().copied().collect();
        let leaving: BTreeSet<u32> = leaving.iter().copied().collect();
        let requested: BTreeMap<u32, String> = requested
            .iter()
            .map(|(p, r)| (*p, (*r).to_owned()))
            .collect();
        plan(
            Me {
                id,
                partitions,
                keeping: &keeping,
                leaving: &leaving,
                requested: &requested,
            },
            table,
            0,
        )
    }

    /// Leases of consecutive partitions from 0: `counts[i]` to `owners[i]`.
    fn held(owners: &[&'static str], counts: &[u32]) -> Vec<(u32, &'static str)> {
        let mut next = 0;
        let mut leases = Vec::new();
        for (owner, count) in owners.iter().zip(counts) {
            leases.extend((next..next + count).map(|p| (p, *owner)));
            next += count;
        }
        leases
    }

    #[test]
    fn shares_are_floor_and_ceil_with_the_remainder_holding_the_ceil() {
        assert_eq!(shares(64, 4), (16, 16, 0));
        assert_eq!(shares(10, 3), (3, 4, 1));
        assert_eq!(shares(2, 5), (0, 1, 2));
        assert_eq!(shares(7, 0), (7, 7, 0));
    }

    #[test]
    fn a_lone_worker_claims_everything() {
        let plan = plan_for("a", 4, &[], &[], &table(&[], &["a"], &[]));
        assert_eq!(plan.claim, vec![0, 1, 2, 3]);
        assert!(plan.ask.is_empty());
    }

    #[test]
    fn a_joining_worker_asks_the_most_loaded_for_its_surplus_only() {
        // 10 over a (6) and b (4); c joins: shares 3,3,4 (one may hold 4).
        let leases: Vec<(u32, &str)> = (0..6)
            .map(|p| (p, "a"))
            .chain((6..10).map(|p| (p, "b")))
            .collect();
        let plan = plan_for("c", 10, &[], &[], &table(&leases, &["a", "b", "c"], &[]));
        assert!(plan.claim.is_empty());
        assert_eq!(plan.target, 3);
        // a holds 2 above the ceil of 4, then one of b's at the ceil since c is below floor.
        assert_eq!(plan.ask, vec![4, 5, 9]);
    }

    #[test]
    fn a_worker_at_its_share_neither_claims_nor_asks() {
        let leases: Vec<(u32, &str)> = (0..5)
            .map(|p| (p, "a"))
            .chain((5..10).map(|p| (p, "b")))
            .collect();
        let plan = plan_for(
            "a",
            10,
            &[0, 1, 2, 3, 4],
            &[],
            &table(&leases, &["a", "b"], &[]),
        );
        assert_eq!(
            plan,
            Plan {
                target: 5,
                ..Plan::default()
            }
        );
    }

    #[test]
    fn the_extra_slots_are_not_over_taken() {
        // 10 over 3: one owner may hold 4. b holds 4 already, so a (at 3) stays at 3.
        let leases: Vec<(u32, &str)> = (0..3)
            .map(|p| (p, "a"))
            .chain((3..7).map(|p| (p, "b")))
            .chain((7..9).map(|p| (p, "c")))
            .collect();
        let plan = plan_for(
            "a",
            10,
            &[0, 1, 2],
            &[],
            &table(&leases, &["a", "b", "c"], &[]),
        );
        assert_eq!(plan.target, 3);
        assert!(plan.claim.is_empty());
        // c (at 2) wants 3 and claims the free 9.
        let plan = plan_for(
            "c",
            10,
            &[7, 8],
            &[],
            &table(&leases, &["a", "b", "c"], &[]),
        );
        assert_eq!(plan.claim, vec![9]);
    }

    #[test]
    fn a_request_is_honoured_only_above_the_floor() {
        let leases: Vec<(u32, &str)> = (0..4).map(|p| (p, "a")).collect();
        let owners = ["a", "b"];
        let plan = plan_for(
            "a",
            4,
            &[0, 1, 2, 3],
            &[(3, "b"), (2, "b")],
            &table(&leases, &owners, &[]),
        );
        assert_eq!(plan.give, vec![2, 3]);
        let plan = plan_for(
            "a",
            4,
            &[0, 1],
            &[(1, "b")],
            &table(&leases[..2], &owners, &[]),
        );
        assert!(plan.give.is_empty(), "a holds its floor of 2: {plan:?}");
    }

    #[test]
    fn an_extra_slot_waits_while_another_owner_is_below_its_floor() {
        // 10 over a (3), b (3) and c (0, just joined, asking): shares 3,3,4. Partition 9 is
        // free, released for c: a at its floor leaves it to c.
        let leases: Vec<(u32, &str)> = (0..3)
            .map(|p| (p, "a"))
            .chain((3..6).map(|p| (p, "b")))
            .collect();
        let owners = ["a", "b", "c"];
        let plan = plan_for("a", 10, &[0, 1, 2], &[], &table(&leases, &owners, &[]));
        assert_eq!(plan.target, 3);
        assert!(plan.claim.is_empty(), "{plan:?}");
        // Once c is at its floor, the extra slot is a's to take.
        let leases: Vec<(u32, &str)> = leases.into_iter().chain((6..9).map(|p| (p, "c"))).collect();
        let plan = plan_for("a", 10, &[0, 1, 2], &[], &table(&leases, &owners, &[]));
        assert_eq!(plan.claim, vec![9]);
    }

    #[test]
    fn a_stale_request_moves_nothing() {
        // 10 over a (4) and b (3), c (3): b asked for 3 earlier and got its share elsewhere; a
        // at the ceil keeps it (b would end above a).
        let leases: Vec<(u32, &str)> = (0..4)
            .map(|p| (p, "a"))
            .chain((4..7).map(|p| (p, "b")))
            .chain((7..10).map(|p| (p, "c")))
            .collect();
        let table = table(&leases, &["a", "b", "c"], &[(3, "b")]);
        let plan = plan_for("a", 10, &[0, 1, 2, 3], &[(3, "b")], &table);
        assert!(plan.give.is_empty(), "{plan:?}");
        // Nor does a request of an owner that is gone.
        let plan = plan_for("a", 10, &[0, 1, 2, 3], &[(3, "gone")], &table);
        assert!(plan.give.is_empty(), "{plan:?}");
    }

    #[test]
    fn partitions_asked_by_another_are_asked_for_when_nothing_else_is_left() {
        // a holds 6 of 6, all marked by b (stale); c, below its floor, asks anyway.
        let leases: Vec<(u32, &str)> = (0..6).map(|p| (p, "a")).collect();
        let asked: Vec<(u32, &str)> = (0..6).map(|p| (p, "b")).collect();
        let plan = plan_for("c", 6, &[], &[], &table(&leases, &["a", "b", "c"], &asked));
        assert_eq!(plan.ask, vec![4, 5]);
    }

    #[test]
    fn free_partitions_are_claimed_from_a_rotated_start() {
        assert_eq!(rotate(&[1, 2, 3, 4], 6), vec![3, 4, 1, 2]);
        assert!(rotate(&[], 3).is_empty());
    }

    #[test]
    fn a_lease_of_an_owner_no_longer_live_is_claimable() {
        // DynamoDB lists a dead owner's leases until they are taken; "gone" is not live.
        let leases: Vec<(u32, &str)> = (0..4).map(|p| (p, "gone")).collect();
        let plan = plan_for("a", 4, &[], &[], &table(&leases, &["a"], &[]));
        assert_eq!(plan.claim, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_partition_asked_by_another_is_left_to_it() {
        let leases: Vec<(u32, &str)> = (0..6).map(|p| (p, "a")).collect();
        let plan = plan_for(
            "c",
            6,
            &[],
            &[],
            &table(&leases, &["a", "b", "c"], &[(5, "b")]),
        );
        assert_eq!(plan.ask, vec![3, 4]);
    }

    // The cases below were written against the survivors of `scripts/mutants.sh` and of
    // cargo-mutants over this file's unit tests (docs/mutants.md): each pins a boundary that
    // neither the model test's random histories nor the cases above decided.

    #[test]
    fn at_its_floor_a_worker_wants_no_extra_slot_once_they_are_all_held() {
        // 10 over 3: one owner may hold 4, and b does; a and c at 3. a stays at 3.
        let owners = ["a", "b", "c"];
        let leases = held(&owners, &[3, 4, 3]);
        let plan = plan_for("a", 10, &[0, 1, 2], &[], &table(&leases, &owners, &[]));
        assert_eq!(plan.target, 3, "{plan:?}");
    }

    #[test]
    fn what_free_partitions_cover_is_not_asked_for_again() {
        // 9 over 3 (3 each): a 4, b 3, c 1 and partition 8 free. c needs 2: claims 8 and asks
        // only a's surplus of one, not b (at its share) besides.
        let owners = ["a", "b", "c"];
        let leases: Vec<(u32, &str)> = held(&["a", "b"], &[4, 3])
            .into_iter()
            .chain([(7, "c")])
            .collect();
        let plan = plan_for("c", 9, &[7], &[], &table(&leases, &owners, &[]));
        assert_eq!((plan.claim, plan.ask), (vec![8], vec![3]));
    }

    #[test]
    fn a_worker_after_an_extra_slot_asks_only_owners_above_the_ceiling() {
        // 10 over 4: shares 2 or 3, two may hold 3. a keeps 2 (its third is being handed
        // over), b holds 3, c and d 2: a wants the free extra slot, but nothing is free and
        // nobody holds more than 3, so it asks nobody (b at 3 is at its share).
        let owners = ["a", "b", "c", "d"];
        let leases = held(&owners, &[3, 3, 2, 2]);
        let plan = plan_leaving("a", 10, (&[0, 1], &[2]), &[], &table(&leases, &owners, &[]));
        assert_eq!(plan.target, 3, "{plan:?}");
        assert!(plan.claim.is_empty() && plan.ask.is_empty(), "{plan:?}");
    }

    #[test]
    fn a_request_on_a_partition_not_kept_is_not_honoured() {
        // 8 over a and b (4 each): a keeps 5 and hands over a sixth (5), on which b asked.
        let owners = ["a", "b"];
        let leases = held(&owners, &[6, 2]);
        let table = table(&leases, &owners, &[(5, "b")]);
        let plan = plan_leaving("a", 8, (&[0, 1, 2, 3, 4], &[5]), &[(5, "b")], &table);
        assert!(plan.give.is_empty(), "{plan:?}");
    }

    #[test]
    fn a_request_is_honoured_when_the_requester_ends_no_higher() {
        // 8 over a (5) and b (3): handing one to b leaves 4 and 4.
        let owners = ["a", "b"];
        let leases = held(&owners, &[5, 3]);
        let table = table(&leases, &owners, &[(4, "b")]);
        let plan = plan_for("a", 8, &[0, 1, 2, 3, 4], &[(4, "b")], &table);
        assert_eq!(plan.give, vec![4]);
    }

    #[test]
    fn requests_are_honoured_only_while_the_giver_stays_ahead() {
        // 9 over a (7) and b (2), b asking for three: after two a holds 5 and b 4; a third
        // would leave b above a.
        let owners = ["a", "b"];
        let leases = held(&owners, &[7, 2]);
        let asked = [(0, "b"), (1, "b"), (2, "b")];
        let marked = table(&leases, &owners, &asked);
        let plan = plan_for("a", 9, &[0, 1, 2, 3, 4, 5, 6], &asked, &marked);
        assert_eq!(plan.give, vec![0, 1]);
        // b asking for three of a's 6 (8 over a and b): a gives down to its floor of 4 only.
        let leases = held(&owners, &[6, 2]);
        let marked = table(&leases, &owners, &asked);
        let plan = plan_for("a", 8, &[0, 1, 2, 3, 4, 5], &asked, &marked);
        assert_eq!(plan.give, vec![0, 1]);
    }

    #[test]
    fn a_pending_request_counts_towards_the_need_and_is_asked_again() {
        // 6 over 3 (2 each): a holds all 6; c asked earlier for 5. c needs 2: 5 again and one
        // more of a's surplus, not three more.
        let owners = ["a", "b", "c"];
        let leases = held(&["a"], &[6]);
        let plan = plan_for("c", 6, &[], &[], &table(&leases, &owners, &[(5, "c")]));
        assert_eq!(plan.ask, vec![4, 5]);
    }

    #[test]
    fn a_pending_request_on_an_owner_that_cannot_honour_it_is_not_asked_again() {
        // 6 over 3 (2 each). c asked b for 5 earlier; b is at its share (2), so c asks a's
        // surplus instead.
        let owners = ["a", "b", "c"];
        let leases = held(&["a", "b"], &[4, 2]);
        let plan = plan_for("c", 6, &[], &[], &table(&leases, &owners, &[(5, "c")]));
        assert_eq!(plan.ask, vec![2, 3]);
        // Nor on one below its share: b holds only 5.
        let leases = held(&["a", "b"], &[5, 1]);
        let plan = plan_for("c", 6, &[], &[], &table(&leases, &owners, &[(5, "c")]));
        assert_eq!(plan.ask, vec![3, 4]);
    }

    #[test]
    fn surplus_is_asked_only_up_to_the_need() {
        // 12 over 4 (3 each): a and b hold 4, c 2, d 2. c needs 1: one of a's, not b's too.
        let owners = ["a", "b", "c", "d"];
        let leases = held(&owners, &[4, 4, 2, 2]);
        let plan = plan_for("c", 12, &[8, 9], &[], &table(&leases, &owners, &[]));
        assert_eq!(plan.ask, vec![3]);
    }

    #[test]
    fn below_its_floor_a_worker_asks_one_owner_at_the_ceiling_per_missing_partition() {
        // 8 over 3: shares 2 or 3. a and b hold 3; c keeps 6 and hands over 7: it needs 1
        // and nothing is free, so it asks one of a's, not b's too.
        let owners = ["a", "b", "c"];
        let leases = held(&owners, &[3, 3, 2]);
        let plan = plan_leaving("c", 8, (&[6], &[7]), &[], &table(&leases, &owners, &[]));
        assert_eq!(plan.ask, vec![2]);
    }
}
