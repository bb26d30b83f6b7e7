//! Partitions that grow: a writer raises the count in `{table}_source` (`grow_to`), a
//! running reader finds it with `discover_partitions` and reads the new partitions from their
//! start; the count never goes down. (The kit's `partitions_grow_and_keep_their_entries` runs
//! too, in `kit`.)

use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_postgres::PostgresSource;

use crate::support::{named_source, pool, settle, shared};

#[tokio::test]
async fn a_running_reader_finds_partitions_another_writer_added_and_reads_them_from_their_start() {
    let _shared = shared().await;
    let (reader, table) = named_source("grow", 2).await;
    reader.append(1, Some("k"), b"old").await.unwrap();
    let old = settle(&reader, 1, 1).await;

    let writer = PostgresSource::new(pool(2).await, 2)
        .with_table(&table)
        .unwrap();
    assert_eq!(writer.grow_to(4).await.unwrap(), 4);
    assert_eq!(
        writer.grow_to(3).await.unwrap(),
        4,
        "a lower count changes nothing"
    );
    writer.append(3, Some("k"), b"new-1").await.unwrap();
    writer.append(3, Some("k"), b"new-2").await.unwrap();

    assert_eq!(reader.partitions(), 2, "not looked up yet");
    assert!(matches!(
        reader.read(3, 0, 10).await,
        Err(SourceError::PartitionOutOfRange { .. })
    ));
    assert_eq!(reader.discover_partitions().await.unwrap(), 4);
    assert_eq!(reader.partitions(), 4);
    let new = settle(&reader, 3, 2).await;
    let payloads: Vec<&[u8]> = new.iter().map(|(_, payload)| payload.as_slice()).collect();
    assert_eq!(payloads, [b"new-1".as_slice(), b"new-2"]);
    assert!(reader.read(2, 0, 10).await.unwrap().entries.is_empty());
    assert_eq!(
        settle(&reader, 1, 1).await,
        old,
        "an old partition unchanged"
    );
    // A wait on a new partition stays pending while nothing is new (no busy loop on a
    // partition the listener did not know when it started), and is woken by a commit.
    let from = new.last().map_or(0, |(position, _)| position + 1);
    let idle = tokio::time::timeout(std::time::Duration::from_millis(300), reader.wait(3, from));
    assert!(
        idle.await.is_err(),
        "a wait on a new partition resolved with nothing new"
    );
    writer.append(3, None, b"new-3").await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(30), reader.wait(3, from))
        .await
        .expect("woken within 30 s")
        .unwrap();
    assert_eq!(settle(&reader, 3, 3).await.len(), 3);
}

#[tokio::test]
async fn a_source_opened_with_fewer_takes_the_stored_count_and_a_lowered_count_is_refused() {
    let _shared = shared().await;
    let (writer, table) = named_source("lowered", 3).await;
    writer.grow_to(5).await.unwrap();
    let fewer = PostgresSource::new(pool(2).await, 3)
        .with_table(&table)
        .unwrap();
    fewer.verify().await.unwrap();
    assert_eq!(fewer.partitions(), 5);

    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE \"{table}_source\" SET partitions = 4"
    )))
    .execute(writer.pool())
    .await
    .unwrap();
    match fewer.discover_partitions().await {
        Err(SourceError::Setup { message, .. }) => {
            assert!(message.contains("never decreases"), "{message}");
        }
        other => panic!("a lowered count was accepted: {other:?}"),
    }
    assert_eq!(fewer.partitions(), 5);
}
