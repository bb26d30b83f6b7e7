//! `advance_in`, this store's form of the caller's transaction: the caller's hash writes are
//! applied by the same script as the advance, only when the advance succeeds; on the single
//! server and on the cluster.

use checkpoint_conformance::fresh_group;
use checkpoint_core::{CheckpointStore, Error, ExclusiveCheckpointStore, Fingerprint};
use checkpoint_redis::{HashWrite, RedisCheckpointStore};

use crate::support::Conn;

crate::on_single_and_cluster!(advance_in_writes_only_when_the_advance_succeeds);

fn fingerprint(byte: u8) -> Fingerprint {
    Fingerprint::from_bytes([byte; 32])
}

async fn advance_in_writes_only_when_the_advance_succeeds<C: Conn>(
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
        .advance_in(
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
        .expect("advance_in");
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
        .advance_in(
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
        .advance_in(
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
