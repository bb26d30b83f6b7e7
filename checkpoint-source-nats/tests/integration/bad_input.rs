//! Refused before any read: bad arguments, and streams not set up as the source expects.

use async_nats::jetstream::stream;
use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_nats::{NatsSource, NatsSourceConfig};

use crate::support::{SERVER, TestStream, context, unique_stream};

fn setup_message(result: Result<NatsSource, SourceError>) -> String {
    match result {
        Err(SourceError::Setup { backend, message }) => {
            assert_eq!(backend, "nats");
            message
        }
        other => panic!("expected a setup error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_stream_is_a_setup_error_saying_how_to_create_it() {
    let _shared = SERVER.read().await;
    let name = unique_stream("missing");
    let message = setup_message(NatsSource::new(context().await, &name, 4).await);
    assert!(
        message.contains(&name) && message.contains("create_stream"),
        "{message}"
    );
}

/// Makes a stream of `config` through the client, not the source.
async fn raw_stream(config: stream::Config) -> async_nats::jetstream::Context {
    let context = context().await;
    context.create_stream(config).await.unwrap();
    context
}

#[tokio::test]
async fn streams_not_set_up_for_the_source_are_refused() {
    let _shared = SERVER.read().await;
    let name = unique_stream("bad");
    let prefix = name.to_lowercase();
    let cases: Vec<(stream::Config, u32, &str)> = vec![
        // Subjects that do not hold the partitions.
        (
            stream::Config {
                subjects: vec![format!("{prefix}.other")],
                ..Default::default()
            },
            4,
            "does not capture",
        ),
        // Only some partitions.
        (
            stream::Config {
                subjects: vec![format!("{prefix}.0"), format!("{prefix}.1")],
                ..Default::default()
            },
            4,
            "does not capture",
        ),
        // A recorded count below the source's (one above it is a stream that grew: taken).
        (
            stream::Config {
                subjects: vec![format!("{prefix}.*")],
                description: Some("checkpoint-partitions=2".into()),
                ..Default::default()
            },
            4,
            "records 2 partitions",
        ),
        // A wildcard and no recorded count.
        (
            stream::Config {
                subjects: vec![format!("{prefix}.*")],
                ..Default::default()
            },
            4,
            "does not record a count",
        ),
        // A work queue deletes what a consumer read.
        (
            stream::Config {
                subjects: vec![format!("{prefix}.*")],
                description: Some("checkpoint-partitions=4".into()),
                retention: stream::RetentionPolicy::WorkQueue,
                ..Default::default()
            },
            4,
            "retention",
        ),
    ];
    for (index, (mut config, partitions, expected)) in cases.into_iter().enumerate() {
        config.name = format!("{name}_{index}");
        let context = raw_stream(config.clone()).await;
        let source_config = NatsSourceConfig::new(config.name.clone(), partitions)
            .unwrap()
            .with_subject_prefix(prefix.clone())
            .unwrap();
        let message = setup_message(
            NatsSource::new_with_config(context.clone(), source_config.clone()).await,
        );
        assert!(message.contains(expected), "case {index}: {message}");
        // create_stream does not take over a stream that is not the source's either.
        let created = NatsSource::create_stream(&context, &source_config).await;
        assert!(
            matches!(created, Err(SourceError::Setup { .. })),
            "case {index}: {created:?}"
        );
        context.delete_stream(&config.name).await.unwrap();
    }
}

#[tokio::test]
async fn literal_subjects_of_every_partition_need_no_recorded_count() {
    let _shared = SERVER.read().await;
    let name = unique_stream("literal");
    let context = raw_stream(stream::Config {
        name: name.clone(),
        subjects: (0..3).map(|p| format!("{name}.{p}")).collect(),
        ..Default::default()
    })
    .await;
    let source = NatsSource::new(context.clone(), &name, 3).await.unwrap();
    assert_eq!(source.partitions(), 3);
    // One more partition than the subjects hold: refused.
    let message = setup_message(NatsSource::new(context.clone(), &name, 4).await);
    assert!(message.contains("does not capture"), "{message}");
    context.delete_stream(&name).await.unwrap();
}

#[tokio::test]
async fn bad_arguments_are_refused_before_any_request() {
    let stream = TestStream::new("args", 2).await;
    let source = stream.source().await;
    assert!(matches!(
        source.read(2, 0, 10).await,
        Err(SourceError::PartitionOutOfRange {
            partition: 2,
            partitions: 2
        })
    ));
    assert!(matches!(
        source.read(0, 0, 0).await,
        Err(SourceError::InvalidInput {
            argument: "max",
            ..
        })
    ));
    assert!(matches!(
        source.read(0, u64::MAX, 1).await,
        Err(SourceError::InvalidInput {
            argument: "from",
            ..
        })
    ));
    assert!(matches!(
        source.wait(5, 0).await,
        Err(SourceError::PartitionOutOfRange { .. })
    ));
    assert!(matches!(
        source.head(5).await,
        Err(SourceError::PartitionOutOfRange { .. })
    ));
    assert!(matches!(
        source.append(9, None, b"x".to_vec()).await,
        Err(SourceError::PartitionOutOfRange { .. })
    ));
    assert!(matches!(
        source
            .append(0, Some("a\r\nNats-Msg-Id: forged"), b"x".to_vec())
            .await,
        Err(SourceError::InvalidInput {
            argument: "key",
            ..
        })
    ));
    assert_eq!(source.head(0).await.unwrap(), None, "nothing was published");
    assert!(NatsSourceConfig::new("a.b", 1).is_err());
    assert!(NatsSourceConfig::new("ok", 0).is_err());
    assert!(
        NatsSourceConfig::new("ok", 1)
            .unwrap()
            .with_subject_prefix("x.*")
            .is_err()
    );
    stream.delete().await;
}
