//! Checking an existing stream and creating a new one.

use async_nats::jetstream::{self, stream};
use checkpoint_core::source::SourceError;

use crate::config::NatsSourceConfig;
use crate::error::{backend, setup};
use crate::subjects::{check_covered, holds_foreign_partition};

/// The token of a stream's description that records its partition count.
pub const PARTITIONS_MARKER: &str = "checkpoint-partitions=";

/// The partition count a stream's description records, if any.
pub(crate) fn recorded_partitions(description: Option<&str>) -> Option<Result<u32, String>> {
    let description = description?;
    let at = description.find(PARTITIONS_MARKER)?;
    let value: String = description[at + PARTITIONS_MARKER.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some(value.parse::<u32>().map_err(|_| value))
}

/// Checks a stream's configuration against what the source expects, and returns the
/// partition count in force: the source's, or the larger one the stream records (it grew).
pub(crate) fn check_stream(
    found: &stream::Config,
    config: &NatsSourceConfig,
) -> Result<u32, SourceError> {
    let name = &config.stream;
    if found.retention != stream::RetentionPolicy::Limits {
        return Err(setup(format!(
            "stream {name:?} has retention {:?}: a source reads a log, which only limits \
             retention keeps (work-queue and interest streams delete what a consumer read); \
             use a stream with the default retention",
            found.retention
        )));
    }
    check_covered(
        name,
        &found.subjects,
        &config.subject_prefix,
        config.partitions,
    )?;
    match recorded_partitions(found.description.as_deref()) {
        Some(Ok(recorded)) if recorded == config.partitions => Ok(recorded),
        Some(Ok(recorded)) if recorded > config.partitions => {
            // The stream grew since the source's count was written down: take its count.
            check_covered(name, &found.subjects, &config.subject_prefix, recorded)?;
            Ok(recorded)
        }
        Some(Ok(recorded)) => Err(setup(format!(
            "stream {name:?} records {recorded} partitions in its description, the source was \
             given {}: open it with {recorded} partitions, or grow the stream to {} first with \
             NatsSource::grow_to (a count only grows: fewer would strand partitions' entries)",
            config.partitions, config.partitions
        ))),
        Some(Err(value)) => Err(setup(format!(
            "stream {name:?} has {PARTITIONS_MARKER}{value:?} in its description, which is not \
             a partition count: write `{PARTITIONS_MARKER}{}` there",
            config.partitions
        ))),
        None => {
            let foreign = found.subjects.iter().find(|pattern| {
                holds_foreign_partition(pattern, &config.subject_prefix, config.partitions)
            });
            match foreign {
                None => Ok(config.partitions),
                Some(pattern) => Err(setup(format!(
                    "stream {name:?} captures {pattern:?}, which may hold partitions beyond the \
                     {} given, and its description does not record a count: add \
                     `{PARTITIONS_MARKER}{}` to its description (`nats stream edit {name} \
                     --description ...`) once you are sure of the count",
                    config.partitions, config.partitions
                ))),
            }
        }
    }
}

/// The configuration [`create_stream`] gives a new stream.
pub(crate) fn new_stream_config(config: &NatsSourceConfig) -> stream::Config {
    stream::Config {
        name: config.stream.clone(),
        description: Some(format!(
            "checkpoint source log: subjects {}.<partition>, {PARTITIONS_MARKER}{}",
            config.subject_prefix, config.partitions
        )),
        subjects: vec![format!("{}.*", config.subject_prefix)],
        storage: stream::StorageType::File,
        retention: stream::RetentionPolicy::Limits,
        ..Default::default()
    }
}

/// Creates the stream of `config` with file storage, its subjects `<prefix>.*` and the
/// partition count in its description; a stream of that name that already exists is checked
/// as [`NatsSource::new`](crate::NatsSource::new) does instead.
pub(crate) async fn create_stream(
    context: &jetstream::Context,
    config: &NatsSourceConfig,
) -> Result<(), SourceError> {
    match context.get_stream(&config.stream).await {
        Ok(mut existing) => {
            let info = existing
                .info()
                .await
                .map_err(|e| backend("setup", true, e))?;
            check_stream(&info.config, config).map(drop)
        }
        Err(error) if is_stream_not_found(&error) => {
            context
                .create_stream(new_stream_config(config))
                .await
                .map_err(|e| backend("setup", true, e))?;
            Ok(())
        }
        Err(error) => Err(backend("setup", true, error)),
    }
}

/// Whether `get_stream` failed because the stream does not exist (JetStream error 10059).
pub(crate) fn is_stream_not_found(error: &jetstream::context::GetStreamError) -> bool {
    matches!(
        error.kind(),
        jetstream::context::GetStreamErrorKind::JetStream(inner)
            if inner.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_is_read_back() {
        assert_eq!(recorded_partitions(None), None);
        assert_eq!(recorded_partitions(Some("a log")), None);
        assert_eq!(
            recorded_partitions(Some("x, checkpoint-partitions=8")),
            Some(Ok(8))
        );
        assert_eq!(
            recorded_partitions(Some("checkpoint-partitions=")),
            Some(Err(String::new()))
        );
    }
}
