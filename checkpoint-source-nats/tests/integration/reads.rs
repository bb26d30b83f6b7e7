//! Reads, pages, sparse positions, empty partitions and head.

use std::time::{Duration, Instant};

use checkpoint_core::source::Source;
use checkpoint_source_nats::NatsSource;

use crate::support::TestStream;

#[tokio::test]
async fn reads_return_what_was_appended_in_order_with_keys_and_times() {
    let stream = TestStream::new("reads", 4).await;
    let source = stream.source().await;
    let mut positions = vec![Vec::new(); 4];
    for i in 0..40u32 {
        let partition = i % 4;
        let key = format!("key-{i}");
        let position = source
            .append(partition, Some(&key), format!("entry {i}").into_bytes())
            .await
            .unwrap();
        positions[partition as usize].push((position, key, i));
    }
    for (partition, expected) in positions.iter().enumerate() {
        let page = source.read(partition as u32, 0, 100).await.unwrap();
        let got: Vec<(u64, Option<String>, Vec<u8>)> = page
            .entries
            .iter()
            .map(|e| (e.position, e.key.clone(), e.payload.clone()))
            .collect();
        let want: Vec<(u64, Option<String>, Vec<u8>)> = expected
            .iter()
            .map(|(p, k, i)| (*p, Some(k.clone()), format!("entry {i}").into_bytes()))
            .collect();
        assert_eq!(got, want, "partition {partition}");
        assert!(page.entries.iter().all(|e| e.appended_at.is_some()));
        // The stream's sequence is shared: partition 0's positions are 1, 5, 9, ...
        assert!(page.next > expected.last().unwrap().0);
    }
    stream.delete().await;
}

#[tokio::test]
async fn pages_go_on_from_next_and_every_position_reads_the_same_suffix() {
    let stream = TestStream::new("pages", 2).await;
    let source = stream.source().await;
    let mut mine = Vec::new();
    for i in 0..30u32 {
        let position = source.append(i % 2, None, vec![i as u8]).await.unwrap();
        if i % 2 == 1 {
            mine.push(position);
        }
    }
    // Page by 4 from 0, going on from each `next`: the same entries as one big read.
    let mut from = 0;
    let mut paged = Vec::new();
    loop {
        let page = source.read(1, from, 4).await.unwrap();
        assert!(page.entries.len() <= 4);
        assert!(page.next >= from);
        if page.entries.is_empty() {
            break;
        }
        paged.extend(page.entries.iter().map(|e| e.position));
        from = page.next;
    }
    assert_eq!(paged, mine);
    // From every position (inside gaps too), the entries at or after it, in order.
    for from in 0..=mine.last().unwrap() + 1 {
        let page = source.read(1, from, 100).await.unwrap();
        let want: Vec<u64> = mine.iter().copied().filter(|p| *p >= from).collect();
        let got: Vec<u64> = page.entries.iter().map(|e| e.position).collect();
        assert_eq!(got, want, "from {from}");
    }
    stream.delete().await;
}

#[tokio::test]
async fn an_empty_read_moves_next_past_the_stream_and_loses_nothing_after() {
    let stream = TestStream::new("empty", 3).await;
    let source = stream.source().await;
    let page = source.read(0, 0, 10).await.unwrap();
    assert!(page.entries.is_empty());
    assert_eq!(page.next, 1, "an empty stream: sequences start at 1");
    let mut last = 0;
    for _ in 0..5 {
        last = source.append(1, None, b"other".to_vec()).await.unwrap();
    }
    let page = source.read(0, 0, 10).await.unwrap();
    assert!(page.entries.is_empty());
    assert_eq!(
        page.next,
        last + 1,
        "nothing of partition 0 up to the stream's last"
    );
    // From a checkpoint beyond the stream's end, next stays at the checkpoint.
    assert_eq!(source.read(0, last + 10, 10).await.unwrap().next, last + 10);
    // Going on from that next still finds what is appended later.
    let position = source.append(0, None, b"mine".to_vec()).await.unwrap();
    let again = source.read(0, page.next, 10).await.unwrap();
    assert_eq!(
        again.entries.iter().map(|e| e.position).collect::<Vec<_>>(),
        vec![position]
    );
    assert_eq!(again.next, position + 1);
    stream.delete().await;
}

#[tokio::test]
async fn head_is_the_last_position_of_the_partition() {
    let stream = TestStream::new("head", 2).await;
    let source = stream.source().await;
    assert_eq!(source.head(0).await.unwrap(), None);
    let first = source.append(0, None, b"a".to_vec()).await.unwrap();
    let _other = source.append(1, None, b"b".to_vec()).await.unwrap();
    assert_eq!(source.head(0).await.unwrap(), Some(first));
    let second = source.append(0, None, b"c".to_vec()).await.unwrap();
    assert_eq!(source.head(0).await.unwrap(), Some(second));
    assert_eq!(source.head(1).await.unwrap(), Some(first + 1));
    stream.delete().await;
}

/// Deletes every consumer of the test's stream behind the source's back (as a server restart
/// or the inactive threshold would).
async fn delete_consumers(stream: &TestStream) -> usize {
    use futures_util::StreamExt;
    let handle = stream
        .context
        .get_stream(stream.config.stream())
        .await
        .unwrap();
    let names: Vec<String> = handle
        .consumer_names()
        .map(|name| name.unwrap())
        .collect()
        .await;
    for name in &names {
        handle.delete_consumer(name).await.unwrap();
    }
    names.len()
}

#[tokio::test]
async fn a_kept_consumer_that_went_away_is_replaced_without_an_error() {
    let stream = TestStream::new("gone", 1).await;
    // A wait asks whether its consumer still exists every half expiry.
    let config = stream
        .config
        .clone()
        .with_wait_expiry(Duration::from_secs(1));
    let source = NatsSource::new_with_config(stream.context.clone(), config)
        .await
        .unwrap();
    let first = source.append(0, None, b"one".to_vec()).await.unwrap();
    let page = source.read(0, 0, 10).await.unwrap();
    assert_eq!(page.next, first + 1);
    assert_eq!(
        delete_consumers(&stream).await,
        1,
        "the source keeps one consumer"
    );
    let second = source.append(0, None, b"two".to_vec()).await.unwrap();
    let page = source.read(0, page.next, 10).await.unwrap();
    assert_eq!(
        page.entries.iter().map(|e| e.position).collect::<Vec<_>>(),
        vec![second]
    );
    // The same for a wait.
    assert_eq!(delete_consumers(&stream).await, 1);
    let third = source.append(0, None, b"three".to_vec()).await.unwrap();
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), source.wait(0, page.next))
        .await
        .expect("the wait finds its consumer gone and resolves on a new one")
        .unwrap();
    println!("the wait took {:?}", started.elapsed());
    let page = source.read(0, page.next, 10).await.unwrap();
    assert_eq!(page.entries[0].position, third);
    stream.delete().await;
}

#[tokio::test]
async fn a_read_with_the_largest_max_returns_what_there_is() {
    let stream = TestStream::new("maxmax", 1).await;
    let source = stream.source().await;
    let position = source.append(0, None, b"only".to_vec()).await.unwrap();
    let page = source.read(0, 0, usize::MAX).await.unwrap();
    assert_eq!(
        page.entries.iter().map(|e| e.position).collect::<Vec<_>>(),
        vec![position]
    );
    stream.delete().await;
}
