//! Partitions that grow: an operator grows the stream (`grow_to`: the recorded count raised,
//! missing subjects added), a running reader finds it with `discover_partitions` and reads
//! the new partitions from their start; the count never goes down. (The kit's
//! `partitions_grow_and_keep_their_entries` runs too, in `kit`.)

use async_nats::jetstream::stream;
use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_nats::{NatsSource, NatsSourceConfig, PARTITIONS_MARKER};

use crate::support::{SERVER, TestStream, context, unique_stream};

fn setup_message<T: std::fmt::Debug>(result: Result<T, SourceError>) -> String {
    match result {
        Err(SourceError::Setup { message, .. }) => message,
        other => panic!("expected a setup error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_running_reader_finds_new_partitions_and_reads_them_from_their_start() {
    let stream = TestStream::new("grow", 2).await;
    let reader = stream.source().await;
    reader.append(1, Some("k"), b"old".to_vec()).await.unwrap();
    let old = reader.read(1, 0, 10).await.unwrap();

    let operator = stream.source().await;
    assert_eq!(operator.grow_to(4).await.unwrap(), 4);
    assert_eq!(
        operator.grow_to(3).await.unwrap(),
        4,
        "a lower count changes nothing"
    );
    let first = operator
        .append(3, Some("k"), b"new-1".to_vec())
        .await
        .unwrap();
    operator
        .append(3, Some("k"), b"new-2".to_vec())
        .await
        .unwrap();

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
    assert_eq!(new.entries[0].position, first);
    assert!(reader.read(2, 0, 10).await.unwrap().entries.is_empty());
    assert_eq!(
        reader.read(1, 0, 10).await.unwrap(),
        old,
        "an old partition unchanged"
    );

    // Opened with the old count, a source takes the stream's; with more, it is refused.
    assert_eq!(stream.source().await.partitions(), 4);
    let more = NatsSourceConfig::new(stream.config.stream(), 6)
        .unwrap()
        .with_subject_prefix(stream.config.subject_prefix())
        .unwrap();
    let refused = NatsSource::new_with_config(stream.context.clone(), more).await;
    assert!(setup_message(refused).contains("grow_to"));
    stream.delete().await;
}

#[tokio::test]
async fn a_stream_of_literal_subjects_is_given_the_new_ones() {
    let _shared = SERVER.read().await;
    let context = context().await;
    let name = unique_stream("literal");
    let prefix = name.to_lowercase();
    context
        .create_stream(stream::Config {
            name: name.clone(),
            description: Some(format!("{PARTITIONS_MARKER}2")),
            subjects: vec![format!("{prefix}.0"), format!("{prefix}.1")],
            ..Default::default()
        })
        .await
        .unwrap();
    let config = NatsSourceConfig::new(name.clone(), 2)
        .unwrap()
        .with_subject_prefix(prefix.clone())
        .unwrap();
    let source = NatsSource::new_with_config(context.clone(), config)
        .await
        .unwrap();
    assert_eq!(source.grow_to(3).await.unwrap(), 3);
    let info = context
        .get_stream(&name)
        .await
        .unwrap()
        .info()
        .await
        .unwrap()
        .clone();
    assert!(
        info.config.subjects.contains(&format!("{prefix}.2")),
        "{:?}",
        info.config.subjects
    );
    assert_eq!(
        info.config.description.as_deref(),
        Some("checkpoint-partitions=3")
    );
    let position = source.append(2, None, b"x".to_vec()).await.unwrap();
    assert_eq!(source.head(2).await.unwrap(), Some(position));
    context.delete_stream(&name).await.unwrap();
}

#[tokio::test]
async fn a_count_lowered_by_hand_is_refused_and_the_known_count_stays() {
    let stream = TestStream::new("lowered", 3).await;
    let source = stream.source().await;
    let mut handle = stream
        .context
        .get_stream(stream.config.stream())
        .await
        .unwrap();
    let mut config = handle.info().await.unwrap().config.clone();
    config.description = Some(format!("{PARTITIONS_MARKER}2"));
    stream.context.update_stream(config).await.unwrap();
    let message = setup_message(source.discover_partitions().await);
    assert!(message.contains("never decreases"), "{message}");
    assert_eq!(source.partitions(), 3);
    stream.delete().await;
}
