//! Unit cases of the balancing rule: each names the boundary it pins (docs/mutants.md lists the
//! mutants the later ones were written against).

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
