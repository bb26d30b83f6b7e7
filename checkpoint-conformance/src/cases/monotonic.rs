//! One public case per clause of the monotonic contract.
//!
//! Each case takes any [`CheckpointStore`], works in groups of its own (see
//! [`fresh_group`](crate::fresh_group)) and returns `Err` with a readable message when the
//! store breaks the clause.

use std::collections::BTreeMap;

use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use checkpoint_core::{Argument, Checkpoint, CheckpointStore, Error};
use futures_util::future::join_all;

use crate::inputs::valid_name;
use crate::{CaseResult, Failure, ensure, ensure_eq, fresh_group};

/// 2^53: the first integer above which an `f64` cannot hold every integer.
const F64_EXACT_LIMIT: u64 = 1 << 53;

/// `list` as a sorted map, so results compare regardless of order, failing on duplicates.
async fn listed(
    store: &dyn CheckpointStore,
    group: &str,
) -> Result<BTreeMap<(String, u32), u64>, Failure> {
    let checkpoints = store.list(group).await?;
    let count = checkpoints.len();
    let map: BTreeMap<_, _> = checkpoints
        .into_iter()
        .map(|c| ((c.subscription, c.partition), c.position))
        .collect();
    ensure!(
        map.len() == count,
        "list({group:?}) returned {count} checkpoints but only {} distinct keys",
        map.len()
    );
    Ok(map)
}

fn expected<'a>(
    entries: impl IntoIterator<Item = (&'a str, u32, u64)>,
) -> BTreeMap<(String, u32), u64> {
    entries
        .into_iter()
        .map(|(s, p, pos)| ((s.to_owned(), p), pos))
        .collect()
}

/// The first save of a key stores its position.
pub async fn first_save_is_stored(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("first-save");
    store.save(&group, "orders", 3, 17).await?;
    ensure_eq!(
        store.load(&group, "orders", 3).await?,
        Some(17),
        "load after the first save"
    );
    Ok(())
}

/// A save ahead of the stored position moves it.
pub async fn higher_save_moves_forward(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("higher");
    store.save(&group, "orders", 0, 10).await?;
    store.save(&group, "orders", 0, 11).await?;
    ensure_eq!(
        store.load(&group, "orders", 0).await?,
        Some(11),
        "load after saving 10 then 11"
    );
    store.save(&group, "orders", 0, 1_000_000).await?;
    ensure_eq!(
        store.load(&group, "orders", 0).await?,
        Some(1_000_000),
        "load after saving 1,000,000"
    );
    Ok(())
}

/// Saving the stored position again changes nothing and is not an error.
pub async fn equal_save_changes_nothing(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("equal");
    store.save(&group, "orders", 0, 42).await?;
    store.save(&group, "orders", 0, 42).await?;
    ensure_eq!(
        store.load(&group, "orders", 0).await?,
        Some(42),
        "load after saving 42 twice"
    );
    ensure_eq!(
        listed(store, &group).await?,
        expected([("orders", 0, 42)]),
        "list after saving 42 twice"
    );
    Ok(())
}

/// A save behind the stored position changes nothing and is not an error.
pub async fn lower_save_is_ignored(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("lower");
    store.save(&group, "orders", 0, 100).await?;
    store.save(&group, "orders", 0, 99).await?;
    store.save(&group, "orders", 0, 0).await?;
    ensure_eq!(
        store.load(&group, "orders", 0).await?,
        Some(100),
        "load after saving 100, 99, 0"
    );
    Ok(())
}

/// A lease handover: the old owner keeps saving late and lower after the new owner saved; the
/// checkpoint never moves back.
pub async fn zombie_save_after_handover_is_ignored(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("zombie");
    // The old owner completes up to 120 and saves 100 (its periodic save lags).
    store.save(&group, "orders", 7, 100).await?;
    // The lease moves; the new owner resumes from 100 and completes up to 180.
    store.save(&group, "orders", 7, 180).await?;
    // The zombie's late saves arrive: 120 and, from an even older batch, 90.
    store.save(&group, "orders", 7, 120).await?;
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("orders", 7, 90),
                Checkpoint::new("orders", 7, 110),
            ],
        )
        .await?;
    ensure_eq!(
        store.load(&group, "orders", 7).await?,
        Some(180),
        "load after the zombie's late saves"
    );
    Ok(())
}

/// `load` of a key never saved is `None`, also when other keys of the group exist.
pub async fn load_of_absent_key_is_none(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("absent");
    ensure_eq!(
        store.load(&group, "orders", 0).await?,
        None,
        "load in an empty group"
    );
    store.save(&group, "orders", 0, 5).await?;
    ensure_eq!(
        store.load(&group, "orders", 1).await?,
        None,
        "load of another partition"
    );
    ensure_eq!(
        store.load(&group, "order", 0).await?,
        None,
        "load of a prefix subscription"
    );
    ensure_eq!(
        store.load(&group, "orders0", 0).await?,
        None,
        "load of a longer subscription"
    );
    ensure_eq!(
        store
            .load(&fresh_group("absent-other"), "orders", 0)
            .await?,
        None,
        "load of the same key in another group"
    );
    Ok(())
}

/// The group, the subscription and the partition each tell keys apart.
pub async fn keys_differ_by_every_part(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("parts");
    let other_group = fresh_group("parts-other");
    store.save(&group, "a", 0, 1).await?;
    store.save(&group, "a", 1, 2).await?;
    store.save(&group, "b", 0, 3).await?;
    store.save(&other_group, "a", 0, 4).await?;
    ensure_eq!(store.load(&group, "a", 0).await?, Some(1), "(group, a, 0)");
    ensure_eq!(store.load(&group, "a", 1).await?, Some(2), "(group, a, 1)");
    ensure_eq!(store.load(&group, "b", 0).await?, Some(3), "(group, b, 0)");
    ensure_eq!(
        store.load(&other_group, "a", 0).await?,
        Some(4),
        "(other group, a, 0)"
    );
    Ok(())
}

/// `list` of a group with no checkpoints is empty.
pub async fn list_of_empty_group_is_empty(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("empty");
    ensure_eq!(
        store.list(&group).await?,
        Vec::<Checkpoint>::new(),
        "list of an unused group"
    );
    Ok(())
}

/// `list` of a group with one checkpoint returns exactly it.
pub async fn list_of_one_checkpoint(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("one");
    store.save(&group, "orders", 2, 9).await?;
    ensure_eq!(
        store.list(&group).await?,
        vec![Checkpoint::new("orders", 2, 9)],
        "list after one save"
    );
    Ok(())
}

/// `list` returns every checkpoint of a large group (2,600 keys over several subscriptions),
/// with nothing missing, repeated or stale.
pub async fn list_of_large_group_is_complete(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("large");
    let mut batch = Vec::new();
    for subscription in 0..13u32 {
        for partition in 0..200u32 {
            let name = format!("subscription-{subscription:02}");
            batch.push(Checkpoint::new(
                name,
                partition * 7,
                u64::from(subscription * 1000 + partition),
            ));
        }
    }
    for chunk in batch.chunks(500) {
        store.save_all(&group, chunk).await?;
    }
    // Move a few after the first save, so a list that returns stale rows is caught too.
    store.save(&group, "subscription-00", 0, 99_999).await?;
    store
        .save(&group, "subscription-12", 7 * 199, 77_777)
        .await?;
    let mut want: BTreeMap<(String, u32), u64> = batch
        .iter()
        .map(|c| ((c.subscription.clone(), c.partition), c.position))
        .collect();
    want.insert(("subscription-00".into(), 0), 99_999);
    want.insert(("subscription-12".into(), 7 * 199), 77_777);
    let got = listed(store, &group).await?;
    ensure_eq!(got.len(), want.len(), "number of checkpoints listed");
    ensure!(
        got == want,
        "list of 2,600 checkpoints differs from what was saved"
    );
    Ok(())
}

/// Groups whose names are prefixes of each other (or differ only after a separator) never
/// see each other's checkpoints, in `list` or `load`.
pub async fn prefix_groups_are_separate(store: &dyn CheckpointStore) -> CaseResult {
    let base = fresh_group("prefix");
    let groups = [
        base.clone(),
        format!("{base}1"),
        format!("{base}:"),
        format!("{base}:x"),
        format!("{base}%"),
        format!("{base}_"),
        format!("{base}\\"),
        format!("{base}}}"),
        format!("{base} "),
    ];
    for (index, group) in groups.iter().enumerate() {
        store.save(group, "s", 0, index as u64 + 1).await?;
    }
    for (index, group) in groups.iter().enumerate() {
        ensure_eq!(
            listed(store, group).await?,
            expected([("s", 0, index as u64 + 1)]),
            "list({group:?}) among groups that share its prefix"
        );
        ensure_eq!(
            store.load(group, "s", 0).await?,
            Some(index as u64 + 1),
            "load in {group:?}"
        );
    }
    // The shortest name as a prefix of a group that was never written.
    ensure_eq!(
        store.list(&base[..base.len() - 1]).await?,
        Vec::<Checkpoint>::new(),
        "list of a prefix of the group"
    );
    Ok(())
}

/// Names made of awkward characters, including every separator a backend might use, quotes,
/// `%`, `{}`, `:`, `\`, emoji and names of exactly 512 bytes, are stored verbatim and never
/// collide, in groups and subscriptions.
pub async fn awkward_names_are_stored_verbatim(store: &dyn CheckpointStore) -> CaseResult {
    let names = awkward_names();
    let group = fresh_group("awkward");
    let mut want = BTreeMap::new();
    for (index, name) in names.iter().enumerate() {
        store
            .save(&group, name, index as u32, index as u64 + 1)
            .await?;
        want.insert((name.clone(), index as u32), index as u64 + 1);
    }
    for (index, name) in names.iter().enumerate() {
        ensure_eq!(
            store.load(&group, name, index as u32).await?,
            Some(index as u64 + 1),
            "load of subscription {name:?}"
        );
    }
    ensure!(
        listed(store, &group).await? == want,
        "list does not return the awkward subscription names verbatim"
    );

    // The same names as groups, each a prefix of the run's own random tag.
    let tag = fresh_group("awk");
    for (index, name) in names.iter().enumerate() {
        let group = awkward_group(name, &tag);
        store.save(&group, "s", 1, index as u64 + 1).await?;
    }
    for (index, name) in names.iter().enumerate() {
        let group = awkward_group(name, &tag);
        ensure_eq!(
            listed(store, &group).await?,
            expected([("s", 1, index as u64 + 1)]),
            "list of group {group:?}"
        );
    }
    Ok(())
}

/// An awkward name made unique per run while staying within 512 bytes.
fn awkward_group(name: &str, tag: &str) -> String {
    if name.len() + tag.len() <= MAX_NAME_BYTES {
        format!("{name}{tag}")
    } else {
        // Keep the 512-byte length: replace the tail by the tag.
        let mut cut = MAX_NAME_BYTES - tag.len();
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        let mut group = format!("{}{tag}", &name[..cut]);
        while group.len() < MAX_NAME_BYTES {
            group.push('x');
        }
        group
    }
}

/// Names that break naive encodings: separators, quotes, wildcards, hash tags, escapes.
pub fn awkward_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "a",
        "a:",
        ":a",
        "a:1",
        "a:1:2",
        "a#1",
        "a|1",
        "a/1",
        "a.1",
        "a 1",
        "a\t1",
        "a\n1",
        "'",
        "\"",
        "`",
        "''",
        "%",
        "%%",
        "_",
        "a%",
        "a_",
        "{",
        "}",
        "{}",
        "{a}",
        "}{",
        "{{a}}",
        "\\",
        "\\\\",
        "a\\",
        "\\0",
        "😀",
        "🦀:🦀",
        "Ωμέγα",
        "é",
        "e\u{301}",
        "\u{feff}x",
        "-- ",
        "'; DROP TABLE checkpoints; --",
        "redis.call('FLUSHALL')",
        "$1",
        "?",
        "*",
        "[a]",
        "#",
        "=",
        "&",
        "+",
        ",",
        ";",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    names.push("x".repeat(MAX_NAME_BYTES));
    names.push("😀".repeat(MAX_NAME_BYTES / 4));
    names.push(format!("{}:", "y".repeat(MAX_NAME_BYTES - 1)));
    names
}

/// Pairs of keys that collide under naive concatenations of subscription and partition are
/// kept apart.
pub async fn keys_that_collide_naively_are_separate(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("collide");
    let keys: [(&str, u32); 10] = [
        ("a", 12),
        ("a1", 2),
        ("a:1", 2),
        ("a", 1),
        ("a:", 12),
        ("a:12", 0),
        ("1", 0),
        ("10", 0),
        ("a#0000000012", 0),
        ("0000000012#a", 0),
    ];
    for (index, (subscription, partition)) in keys.iter().enumerate() {
        store
            .save(&group, subscription, *partition, index as u64 + 100)
            .await?;
    }
    for (index, (subscription, partition)) in keys.iter().enumerate() {
        ensure_eq!(
            store.load(&group, subscription, *partition).await?,
            Some(index as u64 + 100),
            "load of ({subscription:?}, {partition})"
        );
    }
    ensure_eq!(
        listed(store, &group).await?.len(),
        keys.len(),
        "number of keys listed"
    );
    Ok(())
}

/// The lowest and highest partitions are distinct keys and stored exactly.
pub async fn partition_boundaries(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("partitions");
    let partitions = [
        0,
        1,
        i32::MAX as u32,
        i32::MAX as u32 + 1,
        u32::MAX - 1,
        u32::MAX,
    ];
    for (index, partition) in partitions.iter().enumerate() {
        store.save(&group, "s", *partition, index as u64).await?;
    }
    for (index, partition) in partitions.iter().enumerate() {
        ensure_eq!(
            store.load(&group, "s", *partition).await?,
            Some(index as u64),
            "load of partition {partition}"
        );
    }
    ensure_eq!(
        listed(store, &group).await?,
        expected(
            partitions
                .iter()
                .enumerate()
                .map(|(i, p)| ("s", *p, i as u64))
        ),
        "list of boundary partitions"
    );
    Ok(())
}

/// Positions are kept exactly over the whole valid range, including where an `f64` loses
/// integers (above 2^53) and at `i64::MAX`, and compare exactly there.
pub async fn position_boundaries(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("positions");
    let values = [
        0,
        1,
        F64_EXACT_LIMIT - 1,
        F64_EXACT_LIMIT,
        F64_EXACT_LIMIT + 1,
        u64::from(u32::MAX) + 1,
        MAX_POSITION - 1,
        MAX_POSITION,
    ];
    for (partition, value) in values.iter().enumerate() {
        store
            .save(&group, "exact", partition as u32, *value)
            .await?;
        ensure_eq!(
            store.load(&group, "exact", partition as u32).await?,
            Some(*value),
            "load of position {value}"
        );
    }
    ensure_eq!(
        listed(store, &group).await?,
        expected(
            values
                .iter()
                .enumerate()
                .map(|(p, v)| ("exact", p as u32, *v))
        ),
        "list of boundary positions"
    );
    // Comparisons where doubles cannot tell the values apart.
    store.save(&group, "cmp", 0, F64_EXACT_LIMIT).await?;
    store.save(&group, "cmp", 0, F64_EXACT_LIMIT + 1).await?;
    ensure_eq!(
        store.load(&group, "cmp", 0).await?,
        Some(F64_EXACT_LIMIT + 1),
        "2^53 + 1 after 2^53"
    );
    store.save(&group, "cmp", 1, MAX_POSITION).await?;
    store.save(&group, "cmp", 1, MAX_POSITION - 1).await?;
    ensure_eq!(
        store.load(&group, "cmp", 1).await?,
        Some(MAX_POSITION),
        "i64::MAX - 1 after i64::MAX"
    );
    store.save(&group, "cmp", 2, MAX_POSITION - 1).await?;
    store.save(&group, "cmp", 2, MAX_POSITION).await?;
    ensure_eq!(
        store.load(&group, "cmp", 2).await?,
        Some(MAX_POSITION),
        "i64::MAX after i64::MAX - 1"
    );
    store.save(&group, "cmp", 3, 10).await?;
    store.save(&group, "cmp", 3, 9).await?;
    store.save(&group, "cmp", 3, 100).await?;
    ensure_eq!(
        store.load(&group, "cmp", 3).await?,
        Some(100),
        "100 after 9 (more digits must compare higher)"
    );
    Ok(())
}

fn expect_invalid(
    result: Result<impl std::fmt::Debug, Error>,
    argument: Argument,
    what: &str,
) -> CaseResult {
    match result {
        Err(Error::InvalidInput(invalid)) if invalid.argument == argument => Ok(()),
        Err(Error::InvalidInput(invalid)) => Err(Failure::new(format!(
            "{what}: rejected, but as invalid {} instead of {argument}",
            invalid.argument
        ))),
        other => Err(Failure::new(format!(
            "{what}: expected an invalid-input error for the {argument}, got {other:?}"
        ))),
    }
}

/// Every input outside the contract's valid values is rejected with the invalid-input error,
/// naming the argument, and nothing of it is stored; a batch with one invalid entry is
/// rejected whole.
pub async fn invalid_inputs_are_rejected(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("invalid");
    let too_long = "n".repeat(MAX_NAME_BYTES + 1);
    let too_long_multibyte = format!("{}é", "n".repeat(MAX_NAME_BYTES - 1));
    let bad_names = [
        "",
        too_long.as_str(),
        too_long_multibyte.as_str(),
        "a\0b",
        "\0",
    ];
    for bad in bad_names {
        expect_invalid(
            store.list(bad).await,
            Argument::Group,
            &format!("list({bad:?})"),
        )?;
        expect_invalid(
            store.load(bad, "s", 0).await,
            Argument::Group,
            &format!("load with group {bad:?}"),
        )?;
        expect_invalid(
            store.load(&group, bad, 0).await,
            Argument::Subscription,
            &format!("load with subscription {bad:?}"),
        )?;
        expect_invalid(
            store.save(bad, "s", 0, 1).await,
            Argument::Group,
            &format!("save with group {bad:?}"),
        )?;
        expect_invalid(
            store.save(&group, bad, 0, 1).await,
            Argument::Subscription,
            &format!("save with subscription {bad:?}"),
        )?;
        expect_invalid(
            store.save_all(bad, &[Checkpoint::new("s", 0, 1)]).await,
            Argument::Group,
            &format!("save_all with group {bad:?}"),
        )?;
        expect_invalid(
            store
                .save_all(
                    &group,
                    &[Checkpoint::new("ok", 0, 1), Checkpoint::new(bad, 0, 1)],
                )
                .await,
            Argument::Subscription,
            &format!("save_all with an entry of subscription {bad:?}"),
        )?;
    }
    for bad in [MAX_POSITION + 1, u64::MAX] {
        expect_invalid(
            store.save(&group, "s", 0, bad).await,
            Argument::Position,
            &format!("save of position {bad}"),
        )?;
        expect_invalid(
            store
                .save_all(
                    &group,
                    &[Checkpoint::new("ok", 0, 1), Checkpoint::new("s", 0, bad)],
                )
                .await,
            Argument::Position,
            &format!("save_all with an entry at position {bad}"),
        )?;
    }
    ensure_eq!(
        store.list(&group).await?,
        Vec::<Checkpoint>::new(),
        "list after only invalid calls: a rejected batch must store nothing"
    );
    Ok(())
}

/// `save_all` with a key repeated keeps the highest of its positions, wherever it stands.
pub async fn save_all_repeated_keys_keep_highest(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("repeated");
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("s", 0, 5),
                Checkpoint::new("s", 0, 9),
                Checkpoint::new("s", 1, 4),
                Checkpoint::new("s", 0, 7),
                Checkpoint::new("s", 1, 4),
                Checkpoint::new("s", 0, 1),
            ],
        )
        .await?;
    ensure_eq!(
        listed(store, &group).await?,
        expected([("s", 0, 9), ("s", 1, 4)]),
        "list after a batch with repeated keys"
    );
    Ok(())
}

/// `save_all` in any order saves each entry as `save` would, never moving a stored checkpoint
/// back.
pub async fn save_all_any_order_never_moves_back(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("shuffled");
    store.save(&group, "s", 2, 50).await?;
    store.save(&group, "s", 3, 50).await?;
    // A fixed shuffle: entries not in key order, some behind what is stored.
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("t", 9, 3),
                Checkpoint::new("s", 3, 60),
                Checkpoint::new("a", 0, 1),
                Checkpoint::new("s", 2, 40),
                Checkpoint::new("t", 1, 8),
                Checkpoint::new("s", 2, 49),
            ],
        )
        .await?;
    ensure_eq!(
        listed(store, &group).await?,
        expected([
            ("a", 0, 1),
            ("s", 2, 50),
            ("s", 3, 60),
            ("t", 1, 8),
            ("t", 9, 3)
        ]),
        "list after a shuffled batch, partly behind"
    );
    Ok(())
}

/// An empty batch does nothing and is not an error.
pub async fn save_all_empty_batch_does_nothing(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("empty-batch");
    store.save_all(&group, &[]).await?;
    ensure_eq!(
        store.list(&group).await?,
        Vec::<Checkpoint>::new(),
        "list after an empty batch"
    );
    Ok(())
}

/// A batch of 10,000 entries is saved whole, and saved again with some ahead and some behind.
pub async fn save_all_of_ten_thousand(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("ten-thousand");
    let batch: Vec<Checkpoint> = (0..10_000u32)
        .map(|i| Checkpoint::new(format!("s{}", i % 10), i / 10, u64::from(i) * 3))
        .collect();
    store.save_all(&group, &batch).await?;
    let got = listed(store, &group).await?;
    ensure_eq!(
        got.len(),
        10_000,
        "checkpoints listed after a batch of 10,000"
    );
    ensure!(
        batch
            .iter()
            .all(|c| got.get(&(c.subscription.clone(), c.partition)) == Some(&c.position)),
        "a batch of 10,000 was not stored exactly"
    );
    // Again: even entries ahead by one, odd ones behind by one.
    let second: Vec<Checkpoint> = batch
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let position = if i % 2 == 0 {
                c.position + 1
            } else {
                c.position.saturating_sub(1)
            };
            Checkpoint::new(c.subscription.clone(), c.partition, position)
        })
        .collect();
    store.save_all(&group, &second).await?;
    let got = listed(store, &group).await?;
    for (i, c) in batch.iter().enumerate() {
        let want = if i % 2 == 0 {
            c.position + 1
        } else {
            c.position
        };
        let found = got.get(&(c.subscription.clone(), c.partition)).copied();
        ensure_eq!(
            found,
            Some(want),
            "({}, {}) after a second batch of 10,000",
            c.subscription,
            c.partition
        );
    }
    Ok(())
}

/// Many saves of one key at the same time leave the highest, whatever order they land in;
/// concurrent overlapping batches too.
pub async fn concurrent_saves_keep_the_maximum(store: &dyn CheckpointStore) -> CaseResult {
    let group = fresh_group("concurrent");
    // 64 saves of one key, highest in the middle, all in flight at once.
    let positions: Vec<u64> = (0..64u64).map(|i| (i * 37) % 64).collect();
    let results = join_all(positions.iter().map(|p| store.save(&group, "hot", 0, *p))).await;
    for result in results {
        result?;
    }
    ensure_eq!(
        store.load(&group, "hot", 0).await?,
        Some(63),
        "one key after 64 concurrent saves"
    );

    // 8 batches over the same 200 keys, each in its own order.
    let batches: Vec<Vec<Checkpoint>> = (0..8u64)
        .map(|b| {
            (0..200u64)
                .map(|k| {
                    // Every batch covers all 200 keys, each in an order of its own.
                    let rotated = (k + 37 * b) % 200;
                    let key = if b % 2 == 0 { rotated } else { 199 - rotated };
                    Checkpoint::new(format!("k{}", key % 5), key as u32, key * 10 + b)
                })
                .collect()
        })
        .collect();
    let results = join_all(batches.iter().map(|batch| store.save_all(&group, batch))).await;
    for result in results {
        result?;
    }
    let got = listed(store, &group).await?;
    for key in 0..200u64 {
        let found = got.get(&(format!("k{}", key % 5), key as u32)).copied();
        ensure_eq!(
            found,
            Some(key * 10 + 7),
            "key {key} after 8 concurrent overlapping batches"
        );
    }
    Ok(())
}

/// Concurrent histories of owners and zombies, checked against a linearizable max-register.
pub async fn concurrent_histories(store: &dyn CheckpointStore) -> CaseResult {
    crate::history::run_histories(store, &crate::history::HistoryConfig::from_env()).await
}

fn arbitrary_name() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        4 => any::<String>(),
        2 => "[a-z:{}%_\\\\'\"#|/ ]{0,8}",
        1 => prop::collection::vec(any::<char>(), 100..200).prop_map(|chars| chars.into_iter().collect()),
        1 => (500..=520usize).prop_map(|len| "n".repeat(len)),
        1 => Just(String::new()),
        1 => "[a-z]{0,4}\u{0}[a-z]{0,4}",
    ]
}

fn arbitrary_position() -> impl proptest::strategy::Strategy<Value = u64> {
    use proptest::prelude::*;
    prop_oneof![
        6 => 0..=MAX_POSITION,
        2 => prop::sample::select(vec![0, 1, F64_EXACT_LIMIT + 1, MAX_POSITION, MAX_POSITION + 1, u64::MAX]),
        1 => (MAX_POSITION + 1)..=u64::MAX,
    ]
}

/// Arbitrary names, partitions and positions through every entry point: valid ones are stored
/// and read back exactly, invalid ones are rejected with the invalid-input error naming the
/// first invalid argument (group, then subscription, then position), and leave nothing.
pub async fn arbitrary_inputs_round_trip_or_are_rejected(
    store: &dyn CheckpointStore,
) -> CaseResult {
    use proptest::prelude::*;
    use proptest::strategy::ValueTree;

    let config = crate::history::HistoryConfig::from_env();
    let runs = (config.cases / 4).max(16);
    let mut runner = crate::history::runner(runs, config.seed);
    let calls = prop::collection::vec(
        (
            arbitrary_name(),
            arbitrary_name(),
            any::<u32>(),
            arbitrary_position(),
        ),
        1..10,
    );
    for run in 0..runs {
        let calls = calls
            .new_tree(&mut runner)
            .map_err(|reason| Failure::new(format!("generating inputs: {reason}")))?
            .current();
        let base = fresh_group("arbitrary");
        let mut model: BTreeMap<String, BTreeMap<(String, u32), u64>> = BTreeMap::new();
        let context = |what: String| format!("run {run} (CHECKPOINT_SEED={}): {what}", config.seed);
        for (group_suffix, subscription, partition, position) in &calls {
            let group = format!("{base}{group_suffix}");
            let expected_argument = if !valid_name(&group) {
                Some(Argument::Group)
            } else if !valid_name(subscription) {
                Some(Argument::Subscription)
            } else if *position > MAX_POSITION {
                Some(Argument::Position)
            } else {
                None
            };
            let what = format!("save({group:?}, {subscription:?}, {partition}, {position})");
            match expected_argument {
                Some(argument) => {
                    expect_invalid(
                        store
                            .save(&group, subscription, *partition, *position)
                            .await,
                        argument,
                        &context(what.clone()),
                    )?;
                    let batch = [Checkpoint::new(subscription.clone(), *partition, *position)];
                    expect_invalid(
                        store.save_all(&group, &batch).await,
                        argument,
                        &context(format!("save_all of {what}")),
                    )?;
                    if argument != Argument::Position {
                        expect_invalid(
                            store.load(&group, subscription, *partition).await,
                            argument,
                            &context(format!("load of {what}")),
                        )?;
                    }
                    if argument == Argument::Group {
                        expect_invalid(
                            store.list(&group).await,
                            argument,
                            &context(format!("list({group:?})")),
                        )?;
                    }
                }
                None => {
                    store
                        .save(&group, subscription, *partition, *position)
                        .await?;
                    let stored = model
                        .entry(group.clone())
                        .or_default()
                        .entry((subscription.clone(), *partition))
                        .or_insert(*position);
                    *stored = (*stored).max(*position);
                    let want = Some(*stored);
                    ensure_eq!(
                        store.load(&group, subscription, *partition).await?,
                        want,
                        "{}",
                        context(format!("load after {what}"))
                    );
                }
            }
        }
        for (group, want) in &model {
            ensure!(
                listed(store, group).await? == *want,
                "{}",
                context(format!(
                    "list({group:?}) does not return exactly what was saved"
                ))
            );
        }
    }
    Ok(())
}
