//! Reads, waits, heads (one by one and all at once) on a topic of the test broker.

use std::time::{Duration, SystemTime};

use checkpoint_core::source::Source;

use crate::support::topic;

#[tokio::test]
async fn records_come_back_with_their_keys_payloads_times_and_offsets() {
    let source = topic("records", 2).await;
    let before = SystemTime::now() - Duration::from_secs(60);
    let mut offsets = Vec::new();
    for (key, payload) in [(Some("a"), "one"), (None, "two"), (Some("a"), "three")] {
        offsets.push(source.append(1, key, payload).await.expect("appended"));
    }
    let first = offsets[0];
    assert_eq!(
        offsets,
        [first, first + 1, first + 2],
        "one partition's offsets are dense"
    );
    let page = source.read(1, 0, 10).await.expect("read");
    let got: Vec<(u64, Option<&str>, &[u8])> = page
        .entries
        .iter()
        .map(|e| (e.position, e.key.as_deref(), e.payload.as_slice()))
        .collect();
    assert_eq!(
        got,
        [
            (first, Some("a"), b"one".as_slice()),
            (first + 1, None, b"two".as_slice()),
            (first + 2, Some("a"), b"three".as_slice())
        ]
    );
    assert_eq!(page.next, first + 3);
    assert!(
        page.entries
            .iter()
            .all(|e| e.appended_at.is_some_and(|at| at > before))
    );
    assert_eq!(source.head(1).await.expect("head"), Some(first + 2));
    assert_eq!(source.head(0).await.expect("head"), None);
    assert!(
        source
            .read(0, 0, 10)
            .await
            .expect("read")
            .entries
            .is_empty()
    );
}

#[tokio::test]
async fn pages_hold_at_most_max_and_go_on_where_the_last_ended() {
    let source = topic("pages", 1).await;
    let payloads: Vec<Vec<u8>> = (0..250).map(|i| format!("r{i}").into_bytes()).collect();
    for payload in &payloads {
        source
            .append(0, None, payload.clone())
            .await
            .expect("appended");
    }
    let mut from = 0;
    let mut read = Vec::new();
    loop {
        let page = source.read(0, from, 7).await.expect("read");
        assert!(page.entries.len() <= 7);
        if page.entries.is_empty() {
            break;
        }
        read.extend(page.entries.into_iter().map(|e| e.payload));
        from = page.next;
    }
    assert_eq!(read, payloads);
}

#[tokio::test]
async fn a_wait_resolves_when_a_record_is_produced_and_not_before() {
    let source = std::sync::Arc::new(topic("wait", 1).await);
    let nothing = tokio::time::timeout(Duration::from_millis(800), source.wait(0, 0)).await;
    assert!(
        nothing.is_err(),
        "a wait on an empty partition resolved: {nothing:?}"
    );
    let writer = std::sync::Arc::clone(&source);
    let produce = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        writer.append(0, None, b"late".to_vec()).await
    });
    tokio::time::timeout(Duration::from_secs(10), source.wait(0, 0))
        .await
        .expect("the wait resolves after the record")
        .expect("wait");
    let position = produce.await.expect("joined").expect("appended");
    let page = source.read(0, 0, 10).await.expect("read");
    assert_eq!(
        page.entries.iter().map(|e| e.position).collect::<Vec<_>>(),
        [position]
    );
}

#[tokio::test]
async fn a_checkpoint_past_the_end_reads_empty_until_records_reach_it() {
    let source = topic("past", 1).await;
    source
        .append(0, None, b"only".to_vec())
        .await
        .expect("appended");
    let page = source.read(0, 3, 10).await.expect("read past the end");
    assert_eq!((page.entries.len(), page.next), (0, 3));
    source
        .append(0, None, b"second".to_vec())
        .await
        .expect("appended");
    source
        .append(0, None, b"third".to_vec())
        .await
        .expect("appended");
    assert!(
        source
            .read(0, 3, 10)
            .await
            .expect("read")
            .entries
            .is_empty()
    );
    let fourth = source
        .append(0, None, b"fourth".to_vec())
        .await
        .expect("appended");
    let page = source.read(0, 3, 10).await.expect("read");
    assert_eq!(
        page.entries.iter().map(|e| e.position).collect::<Vec<_>>(),
        [fourth]
    );
    assert_eq!(fourth, 3);
}

#[tokio::test]
async fn heads_are_head_of_each_partition_in_one_request_per_leader() {
    let source = topic("heads", 4).await;
    let mut last_of_one = 0;
    for payload in ["a", "b", "c"] {
        last_of_one = source.append(1, None, payload).await.expect("appended");
    }
    let only_of_three = source.append(3, Some("k"), "d").await.expect("appended");
    let asked = [3, 0, 1, 2, 1, 4, u32::MAX];
    let heads = source.heads(&asked).await.expect("heads");
    let mut one_by_one = Vec::new();
    for &partition in &asked {
        one_by_one.push(if partition < source.partitions() {
            source.head(partition).await.expect("head")
        } else {
            None
        });
    }
    assert_eq!(heads, one_by_one, "heads of {asked:?} against head of each");
    assert_eq!(
        heads,
        [
            Some(only_of_three),
            None,
            Some(last_of_one),
            None,
            Some(last_of_one),
            None,
            None
        ]
    );
    assert_eq!(source.heads(&[]).await.expect("heads"), []);
}
