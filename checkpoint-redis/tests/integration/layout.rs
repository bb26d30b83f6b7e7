//! The key and field layout: positions exact around 2^53 and at `i64::MAX` (stored as decimal
//! strings, compared as integers), fields and keys that a naive encoding would confuse, and key
//! prefixes; on the single server and on the cluster.

use checkpoint_conformance::fresh_group;
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_redis::RedisCheckpointStore;

use crate::support::{Conn, raw_value};

/// Sets raw values in a group's hash, as another writer (or an earlier version) left them.
async fn raw_set<C: Conn>(store: &RedisCheckpointStore<C>, group: &str, values: &[(&str, &str)]) {
    let mut connection = store.connection().clone();
    let mut command = redis::cmd("HSET");
    command.arg(store.group_key(group).expect("a valid group"));
    for (field, value) in values {
        command.arg(*field).arg(*value);
    }
    let () = command.query_async(&mut connection).await.expect("HSET");
}

crate::on_single_and_cluster!(
    positions_around_two_to_the_53
    position_at_i64_max
    exclusive_positions_around_two_to_the_53
    save_all_compares_exactly_over_values_written_before
    save_all_refuses_to_write_over_a_corrupt_value
    names_that_collide_naively_are_separate
    groups_with_braces_and_colons_are_separate
    key_prefixes_separate_stores
);

const TWO_TO_THE_53: u64 = 1 << 53;

fn fingerprint(byte: u8) -> Fingerprint {
    Fingerprint::from_bytes([byte; 32])
}

async fn positions_around_two_to_the_53<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-2p53");
    for (partition, position) in [
        (0, TWO_TO_THE_53),
        (1, TWO_TO_THE_53 + 1),
        (2, TWO_TO_THE_53 + 2),
    ] {
        store
            .save(&group, "s", partition, position)
            .await
            .expect("save");
        assert_eq!(
            store.load(&group, "s", partition).await.expect("load"),
            Some(position)
        );
    }
    // 2^53 + 1 is the same double as 2^53: a comparison of Lua numbers would not move.
    store
        .save(&group, "s", 0, TWO_TO_THE_53 + 1)
        .await
        .expect("save");
    assert_eq!(
        store.load(&group, "s", 0).await.expect("load"),
        Some(TWO_TO_THE_53 + 1)
    );
    assert_eq!(
        raw_value(store, &group, "0:s").await.as_deref(),
        Some("9007199254740993")
    );
    // ... and would move this one back.
    store
        .save(&group, "s", 1, TWO_TO_THE_53)
        .await
        .expect("save");
    assert_eq!(
        store.load(&group, "s", 1).await.expect("load"),
        Some(TWO_TO_THE_53 + 1)
    );
    store
        .save(&group, "s", 2, TWO_TO_THE_53 + 1)
        .await
        .expect("save");
    assert_eq!(
        store.load(&group, "s", 2).await.expect("load"),
        Some(TWO_TO_THE_53 + 2)
    );

    // The same through save_all, where every entry is compared on its own.
    store
        .save_all(
            &group,
            &[
                Checkpoint::new("s", 0, TWO_TO_THE_53 + 2),
                Checkpoint::new("s", 1, TWO_TO_THE_53),
                Checkpoint::new("s", 3, TWO_TO_THE_53 + 1),
                Checkpoint::new("s", 3, TWO_TO_THE_53),
            ],
        )
        .await
        .expect("save_all");
    let mut listed = store.list(&group).await.expect("list");
    listed.sort();
    assert_eq!(
        listed,
        vec![
            Checkpoint::new("s", 0, TWO_TO_THE_53 + 2),
            Checkpoint::new("s", 1, TWO_TO_THE_53 + 1),
            Checkpoint::new("s", 2, TWO_TO_THE_53 + 2),
            Checkpoint::new("s", 3, TWO_TO_THE_53 + 1),
        ]
    );
    // Lengths differ: 999 < 1000 although "999" > "1000" as text.
    store.save(&group, "len", 0, 999).await.expect("save");
    store.save(&group, "len", 0, 1000).await.expect("save");
    store.save(&group, "len", 0, 999).await.expect("save");
    assert_eq!(
        store.load(&group, "len", 0).await.expect("load"),
        Some(1000)
    );
}

async fn position_at_i64_max<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-max");
    let max = i64::MAX as u64;
    store.save(&group, "s", 0, max - 1).await.expect("save");
    store.save(&group, "s", 0, max).await.expect("save");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(max));
    store.save(&group, "s", 0, max - 1).await.expect("save");
    store.save(&group, "s", 0, 0).await.expect("save");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(max));
    assert_eq!(
        raw_value(store, &group, "0:s").await.as_deref(),
        Some("9223372036854775807")
    );
    store
        .save_all(
            &group,
            &[Checkpoint::new("t", 7, max), Checkpoint::new("t", 7, 1)],
        )
        .await
        .expect("save_all");
    assert_eq!(store.load(&group, "t", 7).await.expect("load"), Some(max));
    let error = store
        .save(&group, "s", 0, max + 1)
        .await
        .expect_err("above i64::MAX");
    assert!(error.invalid_input().is_some(), "{error:?}");
}

async fn exclusive_positions_around_two_to_the_53<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-excl-2p53");
    let f = fingerprint(1);
    let start = store
        .claim(&group, "p", 0, f, TWO_TO_THE_53)
        .await
        .expect("claim");
    assert_eq!(start, TWO_TO_THE_53);
    store
        .advance(&group, "p", 0, TWO_TO_THE_53, TWO_TO_THE_53 + 1)
        .await
        .expect("advance by one above 2^53");
    // The stale `from` equals the stored position as a double: only an exact comparison
    // refuses it.
    match store
        .advance(&group, "p", 0, TWO_TO_THE_53, TWO_TO_THE_53 + 2)
        .await
    {
        Err(Error::Moved { expected, current }) => {
            assert_eq!(expected, TWO_TO_THE_53);
            assert_eq!(current, Some(TWO_TO_THE_53 + 1));
        }
        other => panic!("expected Moved, got {other:?}"),
    }
    assert_eq!(
        store
            .claim(&group, "p", 0, f, 0)
            .await
            .expect("claim again"),
        TWO_TO_THE_53 + 1
    );
    assert_eq!(
        store.load(&group, "p", 0).await.expect("load"),
        Some(TWO_TO_THE_53 + 1)
    );
    // A monotonic save keeps the fingerprint and compares exactly too.
    store
        .save(&group, "p", 0, TWO_TO_THE_53)
        .await
        .expect("save");
    store
        .save(&group, "p", 0, TWO_TO_THE_53 + 2)
        .await
        .expect("save");
    assert_eq!(
        raw_value(store, &group, "0:p").await,
        Some(format!("9007199254740994|{f}"))
    );
    let max = i64::MAX as u64;
    store
        .advance(&group, "p", 0, TWO_TO_THE_53 + 2, max)
        .await
        .expect("advance to i64::MAX");
    assert_eq!(store.load(&group, "p", 0).await.expect("load"), Some(max));
}

/// Values as earlier versions of the store wrote them (the layout is the same: a decimal
/// position, with `|<fingerprint>` for a claimed checkpoint), set directly, then moved by
/// `save_all` across every boundary of its comparison: lengths, 2^53, the 15-digit blocks it
/// compares as numbers (10^15), and `i64::MAX`. Each pair differs by one, where a comparison
/// of doubles, or of only a part of the digits, would go wrong.
async fn save_all_compares_exactly_over_values_written_before<C: Conn>(
    store: &RedisCheckpointStore<C>,
) {
    let group = fresh_group("redis-save-all-exact");
    let f = fingerprint(3);
    let max = i64::MAX as u64;
    // (stored, saved): the saved position moves the checkpoint only when it is higher.
    let cases: [(u64, u64); 14] = [
        (9, 10),
        (10, 9),
        (999_999_999_999_999, 1_000_000_000_000_000),
        (1_000_000_000_000_000, 999_999_999_999_999),
        (1_000_000_000_000_000, 1_000_000_000_000_001),
        (1_000_000_000_000_001, 1_000_000_000_000_000),
        (TWO_TO_THE_53, TWO_TO_THE_53 + 1),
        (TWO_TO_THE_53 + 1, TWO_TO_THE_53),
        (TWO_TO_THE_53 + 1, TWO_TO_THE_53 + 1),
        (1_999_999_999_999_999_999, 2_000_000_000_000_000_000),
        (2_000_000_000_000_000_000, 1_999_999_999_999_999_999),
        (max - 1, max),
        (max, max - 1),
        (123_456_789_012_345_679, 123_456_789_012_345_678),
    ];
    let mut raw = Vec::new();
    let mut batch = Vec::new();
    for (i, (stored, saved)) in cases.into_iter().enumerate() {
        let partition = u32::try_from(i).expect("a few cases");
        // Even cases plain, odd ones claimed: the fingerprint is kept as it is.
        let value = if i % 2 == 0 {
            stored.to_string()
        } else {
            format!("{stored}|{f}")
        };
        raw.push((format!("{partition}:s"), value));
        batch.push(Checkpoint::new("s", partition, saved));
    }
    let values: Vec<(&str, &str)> = raw.iter().map(|(f, v)| (f.as_str(), v.as_str())).collect();
    raw_set(store, &group, &values).await;
    store.save_all(&group, &batch).await.expect("save_all");
    for (i, (stored, saved)) in cases.into_iter().enumerate() {
        let partition = u32::try_from(i).expect("a few cases");
        let position = stored.max(saved);
        let expected = if i % 2 == 0 {
            position.to_string()
        } else {
            format!("{position}|{f}")
        };
        assert_eq!(
            raw_value(store, &group, &format!("{partition}:s")).await,
            Some(expected),
            "stored {stored}, saved {saved}"
        );
    }
}

/// `save_all` refuses a chunk in which a stored value is not a checkpoint, and writes nothing
/// of it, not even its other entries.
async fn save_all_refuses_to_write_over_a_corrupt_value<C: Conn>(store: &RedisCheckpointStore<C>) {
    for corrupt in [
        "not a number",
        "007",
        "1e5",
        " 5",
        "1 2",
        "",
        "5|",
        "5|ab",
        "12a|x",
        "-1",
        // Numbers of as many digits as their length, which only the script's search for the
        // letters of an exponent or a hexadecimal number refuses (100, 100, 10,000,000).
        "1e2",
        "1E2",
        "0x989680",
    ] {
        let group = fresh_group("redis-save-all-corrupt");
        raw_set(store, &group, &[("0:s", "1"), ("1:s", corrupt)]).await;
        let error = store
            .save_all(
                &group,
                &[Checkpoint::new("s", 0, 2), Checkpoint::new("s", 1, 3)],
            )
            .await
            .expect_err("save_all over a corrupt value");
        assert!(
            matches!(
                error,
                Error::Backend {
                    retryable: false,
                    ..
                }
            ),
            "{corrupt:?}: {error:?}"
        );
        let chain = checkpoint_conformance::error_chain(&error);
        assert!(chain.contains("not a checkpoint"), "{corrupt:?}: {chain}");
        assert_eq!(raw_value(store, &group, "0:s").await.as_deref(), Some("1"));
        assert_eq!(
            raw_value(store, &group, "1:s").await.as_deref(),
            Some(corrupt)
        );
    }
}

async fn names_that_collide_naively_are_separate<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-fields");
    // Under `<subscription>:<partition>` the first two would both be "a:1:2"-like neighbours,
    // and under `<partition>:<subscription>` without a prefix-free partition, "1:a" on 2 and
    // "a" on 21 would meet; the real encoding keeps them all apart.
    let keys: [(&str, u32); 10] = [
        ("a:1", 2),
        ("a", 1),
        ("a:1:2", 0),
        ("1:a", 2),
        ("a", 21),
        ("2:a", 1),
        (":", 0),
        ("::", 0),
        ("0:", 0),
        ("a%7D", 0),
    ];
    let mut expected = Vec::new();
    for (i, (subscription, partition)) in keys.iter().enumerate() {
        let position = 100 + i as u64;
        store
            .save(&group, subscription, *partition, position)
            .await
            .expect("save");
        expected.push(Checkpoint::new(*subscription, *partition, position));
    }
    for checkpoint in &expected {
        assert_eq!(
            store
                .load(&group, &checkpoint.subscription, checkpoint.partition)
                .await
                .expect("load"),
            Some(checkpoint.position),
            "{checkpoint:?}"
        );
    }
    let mut listed = store.list(&group).await.expect("list");
    listed.sort();
    expected.sort();
    assert_eq!(listed, expected);
}

async fn groups_with_braces_and_colons_are_separate<C: Conn>(store: &RedisCheckpointStore<C>) {
    let base = fresh_group("redis-groups");
    let suffixes = [
        "", "}", "{", "{}", "}{", "%7D", "%", "%25", ":", ":{x}", "{x}:", "a}b{c", "😀}",
    ];
    let groups: Vec<String> = suffixes.iter().map(|s| format!("{base}{s}")).collect();
    for (i, group) in groups.iter().enumerate() {
        store.save(group, "s", 0, i as u64 + 1).await.expect("save");
        store
            .claim(group, "x", 0, fingerprint(3), 10 + i as u64)
            .await
            .expect("claim");
    }
    // A group name that is the hash tag of another stays separate too.
    let tagged = format!("{{{base}}}");
    store.save(&tagged, "s", 0, 999).await.expect("save");
    for (i, group) in groups.iter().enumerate() {
        let mut listed = store.list(group).await.expect("list");
        listed.sort();
        assert_eq!(
            listed,
            vec![
                Checkpoint::new("s", 0, i as u64 + 1),
                Checkpoint::new("x", 0, 10 + i as u64)
            ],
            "group {group:?}"
        );
    }
    assert_eq!(
        store.list(&tagged).await.expect("list"),
        vec![Checkpoint::new("s", 0, 999)]
    );
}

async fn key_prefixes_separate_stores<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-prefix");
    let other = store
        .clone()
        .with_key_prefix("checkpoint-test-other")
        .expect("a valid prefix");
    store.save(&group, "s", 0, 1).await.expect("save");
    other.save(&group, "s", 0, 2).await.expect("save");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(1));
    assert_eq!(other.load(&group, "s", 0).await.expect("load"), Some(2));
    assert_eq!(
        other.group_key(&group).expect("a valid group"),
        format!("checkpoint-test-other:{{{group}}}")
    );
    for invalid in ["", "a{b", "a}b", "a\0b"] {
        let error = store
            .clone()
            .with_key_prefix(invalid)
            .expect_err("an invalid prefix");
        assert!(error.invalid_input().is_some(), "{invalid:?}: {error:?}");
    }
    let error = store
        .clone()
        .with_key_prefix("p".repeat(checkpoint_redis::MAX_KEY_PREFIX_BYTES + 1))
        .expect_err("a long prefix");
    assert!(error.invalid_input().is_some());
}
