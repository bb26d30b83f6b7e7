use super::*;

/// Samples 2 s apart of (position, head, owner).
fn window(samples: &[(Option<u64>, Option<u64>, Option<&str>)]) -> Vec<Observation> {
    samples
        .iter()
        .enumerate()
        .map(|(i, (position, head, owner))| Observation {
            at: i as f64 * 2.0,
            position: *position,
            head: *head,
            owner: owner.map(str::to_owned),
        })
        .collect()
}

#[test]
fn past_the_head_or_an_empty_partition_is_caught_up() {
    let judged = judge(&window(&[
        (Some(10), Some(5), None),
        (Some(10), Some(9), None),
    ]));
    assert_eq!(judged.verdict, Verdict::CaughtUp);
    assert_eq!(judged.evidence, "checkpoint 10 is past the head 9");
    let empty = judge(&window(&[(None, None, Some("w"))]));
    assert_eq!(empty.verdict, Verdict::CaughtUp);
    assert_eq!(judge(&[]).verdict, Verdict::CaughtUp);
}

#[test]
fn lag_without_an_owner_in_the_last_two_samples_is_stopped() {
    let w = window(&[
        (Some(5), Some(20), Some("w")),
        (Some(5), Some(25), None),
        (Some(5), Some(30), None),
    ]);
    let judged = judge(&w);
    assert_eq!(judged.verdict, Verdict::Stopped);
    assert_eq!(
        judged.evidence,
        "no live owner; checkpoint 5, head 30, lag 26"
    );
    // One sample without an owner after samples with one: a handover, not yet stopped.
    let handover = judge(&w[..2]);
    assert_ne!(handover.verdict, Verdict::Stopped);
    // A single sample is all there is: stopped at once.
    assert_eq!(judge(&w[1..2]).verdict, Verdict::Stopped);
    // Entries and no checkpoint, nobody reading: stopped too.
    assert_eq!(
        judge(&window(&[(None, Some(3), None)])).verdict,
        Verdict::Stopped
    );
}

#[test]
fn an_owned_checkpoint_that_does_not_move_with_lag_is_stalled() {
    let w = window(&[
        (Some(5), Some(20), Some("w")),
        (Some(5), Some(25), Some("w")),
        (Some(5), Some(30), Some("w")),
    ]);
    let judged = judge(&w);
    assert_eq!(judged.verdict, Verdict::Stalled);
    assert_eq!(
        judged.evidence,
        "checkpoint 5 unchanged for 4.0 s over 3 samples, lag 26, owner w"
    );
    let fresh = judge(&window(&[
        (None, Some(3), Some("w")),
        (None, Some(3), Some("w")),
    ]));
    assert_eq!(fresh.verdict, Verdict::Stalled);
    assert!(
        fresh.evidence.starts_with("no checkpoint for 2.0 s"),
        "{fresh:?}"
    );
    // Lag 0 in one sample of the window: it was caught up, it is not stalled.
    let was_caught_up = window(&[
        (Some(21), Some(20), Some("w")),
        (Some(21), Some(25), Some("w")),
    ]);
    assert_eq!(judge(&was_caught_up).verdict, Verdict::KeepingUp);
}

#[test]
fn a_moving_checkpoint_with_growing_lag_is_falling_behind() {
    let w = window(&[
        (Some(10), Some(29), Some("w")),
        (Some(20), Some(49), Some("w")),
        (Some(30), Some(69), Some("w")),
    ]);
    let judged = judge(&w);
    assert_eq!(judged.verdict, Verdict::FallingBehind);
    assert_eq!(judged.evidence, "lag 20 → 40 over 4.0 s, handling 5.0/s");
    assert_eq!(rate(&w), Some(5.0));
    assert_eq!(arrival(&w), Some(10.0));
    assert_eq!(catch_up(&w), None);
}

#[test]
fn a_moving_checkpoint_with_steady_or_shrinking_lag_is_keeping_up() {
    let w = window(&[
        (Some(10), Some(49), Some("w")),
        (Some(30), Some(59), Some("w")),
        (Some(50), Some(69), Some("w")),
    ]);
    let judged = judge(&w);
    assert_eq!(judged.verdict, Verdict::KeepingUp);
    assert_eq!(judged.evidence, "lag 40 → 20 over 4.0 s, handling 10/s");
    // 20 behind, gaining 10 - 5 a second.
    assert_eq!(catch_up(&w), Some(4.0));
    let one = judge(&w[..1]);
    assert_eq!(one.verdict, Verdict::KeepingUp);
    assert!(
        one.evidence
            .ends_with("one sample, its trend needs a second")
    );
}

#[test]
fn a_lag_that_rises_then_falls_back_is_not_falling_behind() {
    // Last above first, but the slope says the trend is down.
    let w = window(&[
        (Some(10), Some(19), Some("w")),
        (Some(11), Some(60), Some("w")),
        (Some(12), Some(61), Some("w")),
        (Some(50), Some(61), Some("w")),
        (Some(51), Some(61), Some("w")),
    ]);
    assert_eq!(judge(&w).verdict, Verdict::KeepingUp);
}

#[test]
fn verdicts_sort_by_urgency_and_only_three_need_attention() {
    let mut all = Verdict::ALL.to_vec();
    all.reverse();
    all.sort();
    assert_eq!(all, Verdict::ALL);
    let attention: Vec<&str> = Verdict::ALL
        .iter()
        .filter(|v| v.needs_attention())
        .map(|v| v.as_str())
        .collect();
    assert_eq!(attention, ["stopped", "stalled", "falling_behind"]);
}
