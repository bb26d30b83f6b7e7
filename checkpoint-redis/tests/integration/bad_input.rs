//! Bad input: arbitrary names, partitions and positions through every public entry point,
//! counted on the wire by the kit's bad-input driver (with `advance_in`, and `group_key` and
//! `hash_tag`, which send nothing). Invalid ones are refused with the invalid-input error before
//! any request leaves the process; valid ones round-trip exactly. Names that look like SQL,
//! Lua, RESP or key syntax are stored verbatim. The lease operations' invalid inputs go
//! through the kit's lease driver, counted the same way.

use async_trait::async_trait;
use checkpoint_conformance::fresh_group;
use checkpoint_conformance::harness::bad_input::{BadInput, Call, MoreEntryPoints, Reply};
use checkpoint_core::error::Argument;
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_redis::{HashWrite, RedisCheckpointStore};

use crate::support::{counted_store, single_store};

/// This store's own entry points: `advance_in` (an advance that also writes into a read
/// model's hash), and `group_key` and `hash_tag`, which check the group and send nothing.
struct RedisEntryPoints<'a> {
    store: &'a RedisCheckpointStore,
    /// The read model's hash `advance_in` writes into.
    read_model: String,
}

#[async_trait(?Send)]
impl MoreEntryPoints for RedisEntryPoints<'_> {
    async fn send(&mut self, call: Call<'_>) -> Option<(&'static str, Result<Reply, Error>)> {
        let Call::Advance {
            group,
            subscription,
            partition,
            from,
            to,
        } = call
        else {
            return None;
        };
        let writes = [HashWrite::new(&self.read_model, subscription, "v")];
        let result = self
            .store
            .advance_in(group, subscription, partition, from, to, &writes)
            .await;
        Some(("advance_in", result.map(|()| Reply::Done)))
    }

    fn build(&mut self, call: Call<'_>) -> Vec<(&'static str, Result<(), Error>)> {
        let Call::List { group } = call else {
            return Vec::new();
        };
        let key_shape = |key: String| {
            assert!(key.contains('{') && key.ends_with('}'), "{key:?}");
        };
        vec![
            ("group_key", self.store.group_key(group).map(key_shape)),
            ("hash_tag", self.store.hash_tag(group).map(key_shape)),
        ]
    }
}

/// Runs arbitrary inputs through every entry point of a store connected through a counting
/// proxy. Each refused call must leave the count where it was; each valid call must cost at
/// least one round trip (which shows the proxy counts) and read back exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_inputs_are_refused_with_no_request_and_valid_ones_round_trip() {
    let (store, proxy) = counted_store().await;
    let fingerprint = Fingerprint::from_bytes([4; 32]);
    let base = fresh_group("redis-bad-input");
    // Warm-up: connection set-up and every script cached.
    store.save(&base, "warm", 0, 1).await.expect("save");
    store
        .claim(&base, "warm", 1, fingerprint, 0)
        .await
        .expect("claim");
    proxy.reset();

    let read_model = format!("checkpoint-test-read-model:{base}");
    let mut entry_points = RedisEntryPoints {
        store: &store,
        read_model: read_model.clone(),
    };
    BadInput::new(&store, &proxy)
        .run(&mut entry_points)
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));

    // Settings, and an advance_in that would write into the group's own hash.
    for prefix in [
        String::new(),
        "a{b".to_owned(),
        "a}b".to_owned(),
        "a\0b".to_owned(),
        "p".repeat(129),
    ] {
        let error = store
            .clone()
            .with_key_prefix(prefix.clone())
            .expect_err("an invalid prefix");
        assert!(
            matches!(error.invalid_input(), Some(invalid) if invalid.argument == Argument::Setting("key_prefix")),
            "{prefix:?}: {error:?}"
        );
    }
    for chunk in [0, checkpoint_redis::MAX_SAVE_ALL_CHUNK + 1] {
        let error = store
            .clone()
            .with_save_all_chunk(chunk)
            .expect_err("an invalid chunk");
        assert!(error.invalid_input().is_some(), "{chunk}: {error:?}");
    }
    let own = store.group_key(&base).expect("a valid group");
    store
        .claim(&base, "own", 0, fingerprint, 0)
        .await
        .expect("claim");
    let before_own = proxy.round_trips();
    let error = store
        .advance_in(&base, "own", 0, 0, 1, &[HashWrite::new(&own, "0:x", "1")])
        .await
        .expect_err("a write into the group's own hash");
    assert!(
        matches!(error.invalid_input(), Some(invalid) if invalid.argument == Argument::Setting("writes")),
        "{error:?}"
    );
    assert_eq!(
        proxy.round_trips(),
        before_own,
        "a refused advance_in made a request"
    );
    assert_eq!(store.load(&base, "own", 0).await.expect("load"), Some(0));

    let mut connection = single_store().await.connection().clone();
    let _: i64 = redis::cmd("DEL")
        .arg(read_model)
        .query_async(&mut connection)
        .await
        .expect("DEL");
}

/// Names that look like SQL, Lua, RESP, glob patterns or key syntax, as groups, subscriptions
/// and `advance_in` fields and values, through every entry point: stored and returned
/// verbatim, and the group's key in Redis is exactly the documented one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_look_like_code_or_key_syntax_are_stored_verbatim() {
    let store = single_store().await;
    let tag = fresh_group("redis-verbatim");
    let names = [
        "'; DROP TABLE x; --",
        "\"; DROP TABLE checkpoints; --",
        "redis.call('FLUSHALL')",
        "]]..redis.call('FLUSHALL')..[[",
        "return redis.call('DEL', KEYS[1])",
        "%d+",
        "^.*$",
        "{a}",
        "{",
        "}",
        "}{",
        "{}",
        "*",
        "?",
        "[a-z]",
        "\n",
        "\r\n",
        "*3\r\n$3\r\nDEL\r\n$1\r\nx\r\n",
        "%7D",
        "%25",
        "%",
        "a|b",
        "1|deadbeef",
        "0:x",
        ":",
        "$1",
        "\\",
        "\u{7f}\u{1b}[31m",
        "😀",
    ];
    let fingerprint = Fingerprint::from_bytes([8; 32]);
    let mut connection = store.connection().clone();
    for (index, name) in names.iter().enumerate() {
        let group = format!("{name}{tag}");
        let position = (1 << 53) + index as u64;
        // As subscription and group at once.
        store
            .save(&group, name, index as u32, position)
            .await
            .expect("save");
        store
            .save_all(
                &group,
                &[Checkpoint::new(*name, index as u32 + 1, position + 1)],
            )
            .await
            .expect("save_all");
        assert_eq!(
            store.load(&group, name, index as u32).await.expect("load"),
            Some(position)
        );
        let claimed = store
            .claim(&group, name, 7_000 + index as u32, fingerprint, position)
            .await
            .expect("claim");
        assert_eq!(claimed, position);
        store
            .advance(&group, name, 7_000 + index as u32, position, position + 5)
            .await
            .expect("advance");
        let read_model = format!(
            "checkpoint-test-verbatim:{}",
            store.hash_tag(&group).expect("tag")
        );
        store
            .advance_in(
                &group,
                name,
                7_000 + index as u32,
                position + 5,
                position + 6,
                &[HashWrite::new(&read_model, name, name)],
            )
            .await
            .expect("advance_in");
        let mut listed = store.list(&group).await.expect("list");
        listed.sort();
        assert_eq!(
            listed,
            vec![
                Checkpoint::new(*name, index as u32, position),
                Checkpoint::new(*name, index as u32 + 1, position + 1),
                Checkpoint::new(*name, 7_000 + index as u32, position + 6),
            ],
            "{name:?}"
        );
        // The raw data: the documented key and fields, and the caller's write verbatim.
        let escaped = group.replace('%', "%25").replace('}', "%7D");
        let key = format!("checkpoint:{{{escaped}}}");
        assert_eq!(store.group_key(&group).expect("key"), key);
        let mut fields: Vec<String> = redis::cmd("HKEYS")
            .arg(&key)
            .query_async(&mut connection)
            .await
            .expect("HKEYS");
        fields.sort();
        let mut want = vec![
            format!("{index}:{name}"),
            format!("{}:{name}", index + 1),
            format!("{}:{name}", 7_000 + index),
        ];
        want.sort();
        assert_eq!(fields, want, "{name:?}");
        let value: Option<String> = redis::cmd("HGET")
            .arg(&read_model)
            .arg(*name)
            .query_async(&mut connection)
            .await
            .expect("HGET");
        assert_eq!(value.as_deref(), Some(*name));
        let _: i64 = redis::cmd("DEL")
            .arg(&read_model)
            .query_async(&mut connection)
            .await
            .expect("DEL");
    }
    // Nothing was flushed or deleted by any of it: the first group is still there.
    let first = format!("{}{tag}", names[0]);
    assert_eq!(
        store.load(&first, names[0], 0).await.expect("load"),
        Some(1 << 53)
    );
}

/// Every invalid lease call of the kit, through all six operations, is refused with the
/// invalid-input error naming the argument, and none sends a request (counted on the wire).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_lease_inputs_are_refused_with_no_request() {
    use checkpoint_conformance::harness::bad_input::bad_lease_input;
    use checkpoint_core::LeaseStore;

    let (store, proxy) = counted_store().await;
    let group = fresh_group("redis-bad-lease");
    // Warm-up: the connection set up.
    store
        .acquire(&group, "warm", "w", &[0], std::time::Duration::from_secs(1))
        .await
        .expect("acquire");
    let refused = bad_lease_input(&store, Some(&proxy))
        .await
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(refused > 0, "no invalid lease call was tried");
    eprintln!("invalid lease calls refused with no request: {refused}");
}
