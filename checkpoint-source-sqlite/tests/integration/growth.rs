//! Partitions that grow: a writer raises the count in the meta table (`grow_to`), a reader
//! finds it with `discover_partitions` and reads the new partitions from their start; the
//! count never goes down. (The kit's `partitions_grow_and_keep_their_entries` runs too, in
//! `kit`.)

use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_sqlite::SqliteSource;

use crate::support::{TempDb, pool, source};

#[tokio::test]
async fn a_reader_finds_partitions_another_writer_added_and_reads_them_from_their_start() {
    let db = TempDb::new();
    let reader = source(db.path(), 2).await;
    reader.append(1, Some("k"), b"old").await.unwrap();
    let old = reader.read(1, 0, 10).await.unwrap();

    // Another process's writer, on the same file.
    let writer = SqliteSource::new(pool(db.path()).await, 2);
    assert_eq!(writer.grow_to(4).await.unwrap(), 4);
    writer.append(3, Some("k"), b"new-1").await.unwrap();
    writer.append(3, Some("k"), b"new-2").await.unwrap();

    assert_eq!(reader.partitions(), 2, "not looked up yet");
    assert!(matches!(
        reader.read(3, 0, 10).await,
        Err(SourceError::PartitionOutOfRange { .. })
    ));
    assert_eq!(reader.discover_partitions().await.unwrap(), 4);
    assert_eq!(reader.partitions(), 4);
    let new = reader.read(3, 0, 10).await.unwrap();
    let payloads: Vec<&[u8]> = new.entries.iter().map(|e| e.payload.as_slice()).collect();
    assert_eq!(payloads, [b"new-1".as_slice(), b"new-2"]);
    assert_eq!(new.entries[0].position, 1, "a new partition starts at 1");
    assert_eq!(reader.read(2, 0, 10).await.unwrap().entries, []);
    assert_eq!(
        reader.read(1, 0, 10).await.unwrap(),
        old,
        "an old partition unchanged"
    );
}

#[tokio::test]
async fn the_count_never_goes_down() {
    let db = TempDb::new();
    let writer = source(db.path(), 3).await;
    assert_eq!(writer.grow_to(5).await.unwrap(), 5);
    assert_eq!(
        writer.grow_to(2).await.unwrap(),
        5,
        "a lower count changes nothing"
    );
    assert_eq!(writer.partitions(), 5, "the writer knows its own growth");

    // A source opened with fewer takes the stored count; one opened with more is refused.
    let fewer = SqliteSource::new(writer.pool().clone(), 3);
    fewer.head(0).await.unwrap();
    assert_eq!(fewer.partitions(), 5);
    let more = SqliteSource::new(writer.pool().clone(), 6);
    assert!(matches!(
        more.read(0, 0, 1).await,
        Err(SourceError::Setup { .. })
    ));

    // A count lowered by hand is refused, and the count known stays.
    sqlx::query("UPDATE events_meta SET value = 4 WHERE name = 'partitions'")
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

#[tokio::test]
async fn a_writer_appends_to_a_partition_another_added_once_it_looked_the_count_up() {
    let db = TempDb::new();
    let first = source(db.path(), 1).await;
    let second = SqliteSource::new(pool(db.path()).await, 1);
    first.grow_to(2).await.unwrap();
    assert!(matches!(
        second.append(1, None, b"x").await,
        Err(SourceError::PartitionOutOfRange { .. })
    ));
    assert_eq!(second.discover_partitions().await.unwrap(), 2);
    assert_eq!(second.append(1, None, b"x").await.unwrap(), 1);
}
