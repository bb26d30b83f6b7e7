//! Names: stored verbatim, and never confused with one another, whatever separators,
//! quotes, wildcards or escapes they hold.

use std::collections::BTreeMap;

use checkpoint_core::validation::MAX_NAME_BYTES;
use checkpoint_core::{Checkpoint, CheckpointStore};

use super::{expected, listed};
use crate::{CaseResult, ensure, ensure_eq, fresh_group};

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
