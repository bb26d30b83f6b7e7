//! `wait`: at once when something is there, on the next append otherwise, nothing lost when
//! a wait is cancelled.

use std::sync::Arc;
use std::time::{Duration, Instant};

use checkpoint_core::source::Source;

use crate::support::TestStream;

#[tokio::test]
async fn wait_resolves_at_once_when_a_read_can_return_something() {
    let stream = TestStream::new("waitnow", 2).await;
    let source = stream.source().await;
    let position = source.append(1, None, b"x".to_vec()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(2), source.wait(1, 0))
        .await
        .expect("wait resolves at once")
        .unwrap();
    // The message the wait brought is the next read's.
    let page = source.read(1, 0, 10).await.unwrap();
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.entries[0].position, position);
    stream.delete().await;
}

#[tokio::test]
async fn wait_wakes_on_an_append_to_its_partition_only() {
    let stream = TestStream::new("wake", 2).await;
    let source = Arc::new(stream.source().await);
    let next = source.read(0, 0, 10).await.unwrap().next;
    let waiter = {
        let source = Arc::clone(&source);
        tokio::spawn(async move {
            source.wait(0, next).await.unwrap();
            Instant::now()
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    source.append(1, None, b"elsewhere".to_vec()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "woken by another partition");
    let appended = Instant::now();
    let position = source.append(0, None, b"mine".to_vec()).await.unwrap();
    let woke = tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .expect("woken within 2 s")
        .unwrap();
    println!("woken {:?} after the append", woke.duration_since(appended));
    let page = source.read(0, next, 10).await.unwrap();
    assert_eq!(
        page.entries.iter().map(|e| e.position).collect::<Vec<_>>(),
        vec![position]
    );
    stream.delete().await;
}

#[tokio::test]
async fn a_cancelled_wait_loses_no_message() {
    let stream = TestStream::new("cancel", 1).await;
    let source = stream.source().await;
    let mut from = source.read(0, 0, 10).await.unwrap().next;
    let mut appended = Vec::new();
    for round in 0..10u8 {
        // Cancelled while its pull is on the server; the append lands right after.
        let _ = tokio::time::timeout(Duration::from_millis(20), source.wait(0, from)).await;
        appended.push(source.append(0, None, vec![round]).await.unwrap());
        let page = source.read(0, from, 100).await.unwrap();
        let got: Vec<u64> = page.entries.iter().map(|e| e.position).collect();
        assert_eq!(got, vec![*appended.last().unwrap()], "round {round}");
        from = page.next;
    }
    stream.delete().await;
}
