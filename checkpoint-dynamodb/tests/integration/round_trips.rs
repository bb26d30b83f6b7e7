//! Requests per operation, counted on the wire with a proxy in front of the server.
//!
//! The emulator closes the connection after each response, so every request is also a new
//! connection; the proxy counts request→response exchanges either way.

use checkpoint_conformance::fresh_group;
use checkpoint_core::{Checkpoint, CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};

use crate::support::counted_store;

fn fingerprint(byte: u8) -> Fingerprint {
    Fingerprint::from_bytes([byte; 32])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_single_operation_is_one_request() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("round-trips");

    let count = |what: &str, want: u64| {
        let got = proxy.round_trips();
        assert_eq!(got, want, "requests for {what}");
        eprintln!("{what}: {got} request(s)");
        proxy.reset();
    };

    store.save(&group, "s", 0, 10).await.unwrap();
    count("save of a new key", 1);
    store.save(&group, "s", 0, 20).await.unwrap();
    count("save ahead", 1);
    store.save(&group, "s", 0, 5).await.unwrap();
    count("save behind (condition fails, not an error)", 1);
    assert_eq!(store.load(&group, "s", 0).await.unwrap(), Some(20));
    count("load", 1);
    assert_eq!(store.load(&group, "s", 1).await.unwrap(), None);
    count("load of an absent key", 1);
    assert_eq!(store.list(&group).await.unwrap().len(), 1);
    count("list of a one-page group", 1);

    assert_eq!(
        store
            .claim(&group, "x", 0, fingerprint(1), 100)
            .await
            .unwrap(),
        100
    );
    count("claim creating the checkpoint", 1);
    assert_eq!(
        store
            .claim(&group, "x", 0, fingerprint(1), 7)
            .await
            .unwrap(),
        100
    );
    count("claim of an existing checkpoint", 1);
    assert!(matches!(
        store.claim(&group, "x", 0, fingerprint(2), 7).await,
        Err(Error::QueryChanged { .. })
    ));
    count("claim refused with QueryChanged", 1);
    store.advance(&group, "x", 0, 100, 150).await.unwrap();
    count("advance", 1);
    match store.advance(&group, "x", 0, 100, 200).await {
        Err(Error::Moved {
            expected: 100,
            current: Some(150),
        }) => {}
        other => panic!("expected Moved to 150, got {other:?}"),
    }
    count(
        "advance refused with Moved (current position in the same response)",
        1,
    );
    match store.advance(&group, "absent", 0, 1, 2).await {
        Err(Error::Moved {
            expected: 1,
            current: None,
        }) => {}
        other => panic!("expected Moved from an absent checkpoint, got {other:?}"),
    }
    count(
        "advance of an absent checkpoint (no old item in the reply: a consistent read says so)",
        2,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_all_is_one_request_per_distinct_key() {
    let (store, proxy) = counted_store().await;
    let group = fresh_group("round-trips-batch");
    // 60 distinct keys, 15 of them repeated with a lower and a higher position.
    let mut batch: Vec<Checkpoint> = (0..60u32)
        .map(|i| Checkpoint::new(format!("s{}", i % 4), i, u64::from(i) + 10))
        .collect();
    for i in 0..15u32 {
        batch.push(Checkpoint::new(format!("s{}", i % 4), i, 1));
        batch.push(Checkpoint::new(format!("s{}", i % 4), i, 1_000));
    }
    store.save_all(&group, &batch).await.unwrap();
    let requests = proxy.round_trips();
    eprintln!(
        "save_all of {} entries, 60 distinct keys: {requests} requests",
        batch.len()
    );
    assert_eq!(requests, 60, "one UpdateItem per distinct key");
    proxy.reset();

    let listed = store.list(&group).await.unwrap();
    assert_eq!(listed.len(), 60);
    for checkpoint in listed {
        let want = if checkpoint.partition < 15 {
            1_000
        } else {
            u64::from(checkpoint.partition) + 10
        };
        assert_eq!(checkpoint.position, want, "{checkpoint:?}");
    }

    proxy.reset();
    store.save_all(&group, &[]).await.unwrap();
    assert_eq!(proxy.round_trips(), 0, "an empty batch sends nothing");
}
