//! Bad input: arbitrary names, partitions and positions through every public entry point,
//! counted on the wire. Invalid ones are refused with the invalid-input error before any
//! request leaves the process; valid ones round-trip exactly. Names that look like SQL, Lua,
//! RESP or key syntax are stored verbatim.

use std::collections::BTreeMap;

use checkpoint_conformance::fresh_group;
use checkpoint_conformance::inputs::{Inputs, first_invalid, inputs, valid_name};
use checkpoint_conformance::round_trips::CountingProxy;
use checkpoint_core::error::Argument;
use checkpoint_core::validation::{MAX_NAME_BYTES, MAX_POSITION};
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_redis::{HashWrite, RedisCheckpointStore};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};

use crate::support::{single_addr, single_store};

/// Runs arbitrary inputs through every entry point of a store connected through a counting
/// proxy. Each refused call must leave the count where it was; each valid call must cost at
/// least one round trip (which shows the proxy counts) and read back exactly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_inputs_are_refused_with_no_request_and_valid_ones_round_trip() {
    let proxy = CountingProxy::start(single_addr().await)
        .await
        .expect("starting the counting proxy");
    let store = RedisCheckpointStore::connect(&format!("redis://{}", proxy.local_addr()))
        .await
        .expect("connecting through the proxy");
    let fingerprint = Fingerprint::from_bytes([4; 32]);
    let base = fresh_group("redis-bad-input");
    // Warm-up: connection set-up and every script cached.
    store.save(&base, "warm", 0, 1).await.expect("save");
    store
        .claim(&base, "warm", 1, fingerprint, 0)
        .await
        .expect("claim");
    proxy.reset();

    let config = checkpoint_conformance::history::HistoryConfig::from_env();
    let cases = config.cases.clamp(64, 256);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&config.seed.to_le_bytes());
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        proptest::test_runner::TestRng::from_seed(
            proptest::test_runner::RngAlgorithm::ChaCha,
            &bytes,
        ),
    );
    let strategy = inputs();
    let (mut refused, mut performed) = (0u64, 0u64);
    // What the valid saves stored, to read back.
    let mut model: BTreeMap<(String, String, u32), u64> = BTreeMap::new();
    for case in 0..cases {
        let inputs = strategy
            .new_tree(&mut runner)
            .expect("generating inputs")
            .current();
        let context = format!("case {case} (CHECKPOINT_SEED={}): {inputs:?}", config.seed);
        // A fresh group per case unless the generated one is invalid (kept as generated).
        let unique = format!("{base}/{case}/{}", inputs.group);
        let group = if valid_name(&inputs.group) && unique.len() <= MAX_NAME_BYTES {
            unique
        } else {
            inputs.group.clone()
        };
        let Inputs {
            subscription: s,
            partition: p,
            position,
            from,
            to,
            ..
        } = &inputs;
        let (s, p, position, from, to) = (s.as_str(), *p, *position, *from, *to);

        // Runs one call: refused with `argument` and no round trip, or performed with at least
        // one.
        macro_rules! call {
            ($name:literal, $expected:expr, $call:expr) => {{
                let before = proxy.round_trips();
                let result = $call.await;
                let trips = proxy.round_trips() - before;
                match ($expected, result) {
                    (Some(argument), Err(Error::InvalidInput(invalid))) => {
                        assert_eq!(invalid.argument, argument, "{} in {context}", $name);
                        assert_eq!(
                            trips, 0,
                            "{} sent a request for invalid input in {context}",
                            $name
                        );
                        refused += 1;
                        None
                    }
                    (Some(argument), other) => {
                        panic!(
                            "{} should be refused for its {argument}, got {other:?} in {context}",
                            $name
                        )
                    }
                    (None, Ok(value)) => {
                        assert!(
                            trips >= 1,
                            "{} of valid input made no round trip in {context}",
                            $name
                        );
                        performed += 1;
                        Some(value)
                    }
                    (None, Err(error)) => {
                        panic!("{} of valid input failed: {error:?} in {context}", $name)
                    }
                }
            }};
        }

        let save_check = first_invalid(&group, Some(s), &[(Argument::Position, position)]);
        if call!("save", save_check, store.save(&group, s, p, position)).is_some() {
            let stored = model
                .entry((group.clone(), s.to_owned(), p))
                .or_insert(position);
            *stored = (*stored).max(position);
        }
        let load_check = first_invalid(&group, Some(s), &[]);
        if let Some(loaded) = call!("load", load_check, store.load(&group, s, p)) {
            assert_eq!(
                loaded,
                model.get(&(group.clone(), s.to_owned(), p)).copied(),
                "load in {context}"
            );
        }
        let list_check = first_invalid(&group, None, &[]);
        if let Some(listed) = call!("list", list_check, store.list(&group)) {
            let mut listed: Vec<(String, u32, u64)> = listed
                .into_iter()
                .map(|c| (c.subscription, c.partition, c.position))
                .collect();
            listed.sort();
            let want: Vec<(String, u32, u64)> = model
                .iter()
                .filter(|((g, _, _), _)| *g == group)
                .map(|((_, s, p), position)| (s.clone(), *p, *position))
                .collect();
            assert_eq!(listed, want, "list in {context}");
        }

        // A batch is refused whole for its first invalid entry.
        let batch: Vec<Checkpoint> = inputs
            .batch
            .iter()
            .map(|(s, p, position)| Checkpoint::new(s.clone(), *p, *position))
            .collect();
        let batch_check = if valid_name(&group) {
            inputs.batch.iter().find_map(|(s, _, position)| {
                first_invalid(&group, Some(s), &[(Argument::Position, *position)])
            })
        } else {
            Some(Argument::Group)
        };
        if call!("save_all", batch_check, store.save_all(&group, &batch)).is_some() {
            for (s, p, position) in &inputs.batch {
                let stored = model
                    .entry((group.clone(), s.clone(), *p))
                    .or_insert(*position);
                *stored = (*stored).max(*position);
            }
        }

        // The exclusive entry points, on a subscription of their own so that the monotonic
        // model above is not disturbed.
        let exclusive = format!("excl/{s}");
        let e = if valid_name(s) && exclusive.len() <= MAX_NAME_BYTES {
            exclusive.as_str()
        } else {
            s
        };
        let claim_check = first_invalid(&group, Some(e), &[(Argument::InitialPosition, position)]);
        let claimed = call!(
            "claim",
            claim_check,
            store.claim(&group, e, p, fingerprint, position)
        );
        if let Some(claimed) = claimed {
            assert_eq!(
                claimed, position,
                "a first claim returns its initial position in {context}"
            );
        }
        // From the claimed position when there is one, so that a valid advance can succeed.
        let (from, to) = match claimed {
            Some(at) if at < MAX_POSITION => (at, at + 1),
            _ => (from, to),
        };
        let mut advance_check = first_invalid(
            &group,
            Some(e),
            &[(Argument::From, from), (Argument::To, to)],
        );
        if advance_check.is_none() && to <= from {
            advance_check = Some(Argument::To);
        }
        let read_model = format!("checkpoint-test-read-model:{base}");
        let writes = [HashWrite::new(&read_model, s, "v")];
        if advance_check.is_some() {
            call!(
                "advance",
                advance_check,
                store.advance(&group, e, p, from, to)
            );
            call!(
                "advance_with",
                advance_check,
                store.advance_with(&group, e, p, from, to, &writes)
            );
        } else {
            // Valid: it moves when the checkpoint is at `from`, and is refused as moved
            // otherwise; either way the server was asked.
            let before = proxy.round_trips();
            let result = store.advance(&group, e, p, from, to).await;
            assert!(
                proxy.round_trips() > before,
                "a valid advance made no request in {context}"
            );
            performed += 1;
            match result {
                Ok(()) => {
                    assert_eq!(
                        claimed,
                        Some(from),
                        "advance moved an unclaimed checkpoint in {context}"
                    );
                    assert_eq!(
                        store.load(&group, e, p).await.expect("load"),
                        Some(to),
                        "{context}"
                    );
                    if to < MAX_POSITION {
                        call!(
                            "advance_with",
                            None::<Argument>,
                            store.advance_with(&group, e, p, to, to + 1, &writes)
                        );
                        assert_eq!(
                            store.load(&group, e, p).await.expect("load"),
                            Some(to + 1),
                            "{context}"
                        );
                    }
                }
                Err(Error::Moved { .. }) => {
                    assert_ne!(
                        claimed,
                        Some(from),
                        "advance from the claimed position refused in {context}"
                    );
                }
                Err(error) => panic!("advance of valid input failed: {error:?} in {context}"),
            }
        }

        // Entry points without I/O: the same rules, and never a request.
        let before = proxy.round_trips();
        for result in [store.group_key(&group), store.hash_tag(&group)] {
            match (valid_name(&group), result) {
                (true, Ok(key)) => assert!(key.contains('{') && key.ends_with('}'), "{key:?}"),
                (false, Err(Error::InvalidInput(invalid))) => {
                    assert_eq!(invalid.argument, Argument::Group, "{context}")
                }
                (valid, other) => {
                    panic!("group_key/hash_tag (valid: {valid}) gave {other:?} in {context}")
                }
            }
        }
        assert_eq!(
            proxy.round_trips(),
            before,
            "group_key/hash_tag made a request"
        );
    }

    // Settings, and an advance_with that would write into the group's own hash.
    let before = proxy.round_trips();
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
        .advance_with(&base, "own", 0, 0, 1, &[HashWrite::new(&own, "0:x", "1")])
        .await
        .expect_err("a write into the group's own hash");
    assert!(
        matches!(error.invalid_input(), Some(invalid) if invalid.argument == Argument::Setting("writes")),
        "{error:?}"
    );
    assert_eq!(
        proxy.round_trips(),
        before_own,
        "a refused advance_with made a request"
    );
    assert_eq!(store.load(&base, "own", 0).await.expect("load"), Some(0));
    let _ = before;

    eprintln!(
        "{cases} arbitrary inputs (CHECKPOINT_SEED={}): {refused} calls refused with no round trip, {performed} valid calls performed and read back",
        config.seed
    );
    assert!(
        refused > 0 && performed > 0,
        "the generator should produce both kinds"
    );
    let mut connection = single_store().await.connection().clone();
    let _: i64 = redis::cmd("DEL")
        .arg(format!("checkpoint-test-read-model:{base}"))
        .query_async(&mut connection)
        .await
        .expect("DEL");
}

/// Names that look like SQL, Lua, RESP, glob patterns or key syntax, as groups, subscriptions
/// and `advance_with` fields and values, through every entry point: stored and returned
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
            .advance_with(
                &group,
                name,
                7_000 + index as u32,
                position + 5,
                position + 6,
                &[HashWrite::new(&read_model, name, name)],
            )
            .await
            .expect("advance_with");
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
