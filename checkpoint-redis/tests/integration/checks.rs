//! Redis-specific checks, run against both the single server and the cluster.

use checkpoint_conformance::fresh_group;
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_redis::{HashWrite, RedisCheckpointStore, UnexpectedData};
use redis::aio::ConnectionLike;

/// The connections the store runs on in these tests.
pub trait Conn: ConnectionLike + Clone + Send + Sync + 'static {}
impl<C: ConnectionLike + Clone + Send + Sync + 'static> Conn for C {}

/// Expands to one `#[tokio::test]` per check, each with a fresh store from `$factory`.
#[macro_export]
macro_rules! redis_checks {
    ($factory:path) => {
        $crate::redis_checks!(@tests $factory;
            positions_around_two_to_the_53
            position_at_i64_max
            exclusive_positions_around_two_to_the_53
            scripts_are_reloaded_after_script_flush
            names_that_collide_naively_are_separate
            groups_with_braces_and_colons_are_separate
            list_follows_the_scan_cursor_over_a_large_group
            advance_with_writes_only_when_the_advance_succeeds
            foreign_data_in_a_group_is_an_error
            key_prefixes_separate_stores
            save_all_at_the_smallest_and_largest_chunks
        );
    };
    (@tests $factory:path; $($check:ident)*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let store = $factory().await;
                $crate::checks::$check(&store).await;
            }
        )*
    };
}

const TWO_TO_THE_53: u64 = 1 << 53;

fn fingerprint(byte: u8) -> Fingerprint {
    Fingerprint::from_bytes([byte; 32])
}

/// Raw `HGET` of the stored value, to see exactly what the scripts wrote.
async fn raw_value<C: Conn>(
    store: &RedisCheckpointStore<C>,
    group: &str,
    field: &str,
) -> Option<String> {
    let mut connection = store.connection().clone();
    redis::cmd("HGET")
        .arg(store.group_key(group).expect("a valid group"))
        .arg(field)
        .query_async(&mut connection)
        .await
        .expect("HGET")
}

pub async fn positions_around_two_to_the_53<C: Conn>(store: &RedisCheckpointStore<C>) {
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

pub async fn position_at_i64_max<C: Conn>(store: &RedisCheckpointStore<C>) {
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

pub async fn exclusive_positions_around_two_to_the_53<C: Conn>(store: &RedisCheckpointStore<C>) {
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

async fn script_flush<C: Conn>(store: &RedisCheckpointStore<C>) {
    let mut connection = store.connection().clone();
    // On a cluster redis-rs sends SCRIPT FLUSH to every node.
    let () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut connection)
        .await
        .expect("SCRIPT FLUSH");
}

pub async fn scripts_are_reloaded_after_script_flush<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-flush");
    store
        .save(&group, "s", 0, 1)
        .await
        .expect("save before the flush");
    script_flush(store).await;
    store
        .save(&group, "s", 0, 2)
        .await
        .expect("save after the flush");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(2));
    script_flush(store).await;
    store
        .save_all(
            &group,
            &[Checkpoint::new("s", 0, 3), Checkpoint::new("s", 1, 4)],
        )
        .await
        .expect("save_all after the flush");
    script_flush(store).await;
    let position = store
        .claim(&group, "s", 0, fingerprint(2), 0)
        .await
        .expect("claim after the flush");
    assert_eq!(position, 3);
    script_flush(store).await;
    store
        .advance(&group, "s", 0, 3, 5)
        .await
        .expect("advance after the flush");
    assert_eq!(store.load(&group, "s", 0).await.expect("load"), Some(5));
    assert_eq!(store.load(&group, "s", 1).await.expect("load"), Some(4));
    // A batch of several chunks, pipelined: every chunk finds the script gone and is sent
    // again with its source.
    script_flush(store).await;
    let batch: Vec<Checkpoint> = (0..2_500u32)
        .map(|i| Checkpoint::new("many", i, u64::from(i) + 10))
        .collect();
    store
        .save_all(&group, &batch)
        .await
        .expect("save_all of three chunks after the flush");
    let listed = store.list(&group).await.expect("list");
    for checkpoint in &batch {
        assert!(
            listed.contains(checkpoint),
            "{checkpoint:?} missing after the flush"
        );
    }
}

pub async fn names_that_collide_naively_are_separate<C: Conn>(store: &RedisCheckpointStore<C>) {
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

pub async fn groups_with_braces_and_colons_are_separate<C: Conn>(store: &RedisCheckpointStore<C>) {
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

pub async fn list_follows_the_scan_cursor_over_a_large_group<C: Conn>(
    store: &RedisCheckpointStore<C>,
) {
    // More fields than one HSCAN step visits (LIST_SCAN_COUNT) and than a listpack holds, so
    // the hash is a real hash table and list needs several cursor steps.
    let group = fresh_group("redis-scan");
    let count = 3 * checkpoint_redis::LIST_SCAN_COUNT + 7;
    let batch: Vec<Checkpoint> = (0..count)
        .map(|i| Checkpoint::new(format!("s{}", i % 13), i as u32, i as u64 * 3))
        .collect();
    store.save_all(&group, &batch).await.expect("save_all");
    let mut listed = store.list(&group).await.expect("list");
    listed.sort();
    let mut expected = batch;
    expected.sort();
    assert_eq!(listed.len(), count);
    assert_eq!(listed, expected);
}

pub async fn advance_with_writes_only_when_the_advance_succeeds<C: Conn>(
    store: &RedisCheckpointStore<C>,
) {
    let group = fresh_group("redis-advance-with");
    let tag = store.hash_tag(&group).expect("a valid group");
    let read_model = format!("test-read-model:{tag}");
    let totals = format!("test-totals:{tag}");
    store
        .claim(&group, "p", 0, fingerprint(4), 10)
        .await
        .expect("claim");
    store
        .advance_with(
            &group,
            "p",
            0,
            10,
            20,
            &[
                HashWrite::new(&read_model, "order-1", "shipped"),
                HashWrite::new(&totals, "count", "1"),
            ],
        )
        .await
        .expect("advance_with");
    let mut connection = store.connection().clone();
    let shipped: Option<String> = redis::cmd("HGET")
        .arg(&read_model)
        .arg("order-1")
        .query_async(&mut connection)
        .await
        .expect("HGET");
    assert_eq!(shipped.as_deref(), Some("shipped"));
    assert_eq!(store.load(&group, "p", 0).await.expect("load"), Some(20));

    // A stale advance writes nothing.
    match store
        .advance_with(
            &group,
            "p",
            0,
            10,
            30,
            &[HashWrite::new(&read_model, "order-1", "cancelled")],
        )
        .await
    {
        Err(Error::Moved {
            expected: 10,
            current: Some(20),
        }) => {}
        other => panic!("expected Moved from 10 to 20, got {other:?}"),
    }
    // An advance of a checkpoint that does not exist writes nothing either.
    match store
        .advance_with(
            &group,
            "absent",
            0,
            0,
            1,
            &[HashWrite::new(&read_model, "order-2", "new")],
        )
        .await
    {
        Err(Error::Moved {
            expected: 0,
            current: None,
        }) => {}
        other => panic!("expected Moved with no current position, got {other:?}"),
    }
    let values: Vec<Option<String>> = redis::cmd("HMGET")
        .arg(&read_model)
        .arg("order-1")
        .arg("order-2")
        .query_async(&mut connection)
        .await
        .expect("HMGET");
    assert_eq!(values, vec![Some("shipped".to_owned()), None]);
    assert_eq!(store.load(&group, "p", 0).await.expect("load"), Some(20));
    let () = redis::cmd("DEL")
        .arg(&read_model)
        .arg(&totals)
        .query_async(&mut connection)
        .await
        .expect("DEL");
}

pub async fn foreign_data_in_a_group_is_an_error<C: Conn>(store: &RedisCheckpointStore<C>) {
    let group = fresh_group("redis-foreign");
    store.save(&group, "s", 0, 1).await.expect("save");
    let mut connection = store.connection().clone();
    let () = redis::cmd("HSET")
        .arg(store.group_key(&group).expect("a valid group"))
        .arg("0:t")
        .arg("not a number")
        .query_async(&mut connection)
        .await
        .expect("HSET");
    for error in [
        store
            .list(&group)
            .await
            .expect_err("list of a corrupt group"),
        store
            .load(&group, "t", 0)
            .await
            .expect_err("load of a corrupt value"),
        store
            .save(&group, "t", 0, 5)
            .await
            .expect_err("save over a corrupt value"),
    ] {
        match &error {
            Error::Backend {
                retryable: false, ..
            } => {}
            other => panic!("expected a non-retryable backend error, got {other:?}"),
        }
        let chain = checkpoint_conformance::error_chain(&error);
        assert!(
            chain.contains("not a checkpoint") || chain.contains("unexpected data"),
            "{chain}"
        );
    }
    let error = store.list(&group).await.expect_err("list");
    let source = std::error::Error::source(&error).expect("a source");
    assert!(
        source.downcast_ref::<UnexpectedData>().is_some(),
        "{error:?}"
    );
    // The corrupt value was not overwritten by the refused save.
    let raw = raw_value(store, &group, "0:t").await;
    assert_eq!(raw.as_deref(), Some("not a number"));
}

pub async fn key_prefixes_separate_stores<C: Conn>(store: &RedisCheckpointStore<C>) {
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

pub async fn save_all_at_the_smallest_and_largest_chunks<C: Conn>(store: &RedisCheckpointStore<C>) {
    let largest = checkpoint_redis::MAX_SAVE_ALL_CHUNK;
    for chunk in [1, 7, largest] {
        let chunked = store
            .clone()
            .with_save_all_chunk(chunk)
            .expect("a valid chunk size");
        let group = fresh_group("redis-chunks");
        // Every entry is new (one HSET of 2 × chunk values) and then every entry moves.
        let count = if chunk == largest {
            largest
        } else {
            3 * chunk + 1
        };
        for offset in [1, 2] {
            let batch: Vec<Checkpoint> = (0..count)
                .map(|i| Checkpoint::new("s", i as u32, (1 << 60) + i as u64 + offset))
                .collect();
            chunked.save_all(&group, &batch).await.expect("save_all");
            let mut listed = store.list(&group).await.expect("list");
            listed.sort();
            assert_eq!(listed, batch, "chunk {chunk}");
        }
    }
    for invalid in [0, largest + 1] {
        let error = store
            .clone()
            .with_save_all_chunk(invalid)
            .expect_err("an invalid chunk size");
        assert!(error.invalid_input().is_some(), "{invalid}: {error:?}");
    }
}
