//! Opening a NATS JetStream log (feature `source-nats`): the partition count is the
//! `checkpoint-partitions=N` of the stream's description, read before the source is opened,
//! since the source refuses any other count.

use std::time::Duration;

use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_nats::{NatsSource, NatsSourceConfig, PARTITIONS_MARKER};

use crate::error::{CliError, chain};

/// Checks `stream` as a name the source takes.
pub(super) fn check_stream_name(stream: &str) -> Result<(), SourceError> {
    NatsSourceConfig::new(stream, 1).map(drop)
}

/// Connects to `url` and opens the source over `stream`, with the count its description
/// records or `fallback`; each request of the source bounded by `timeout`.
pub(super) async fn open(
    url: &str,
    stream: &str,
    fallback: u32,
    timeout: Duration,
    context: &str,
) -> Result<Box<dyn Source>, CliError> {
    let client = async_nats::connect(url)
        .await
        .map_err(|error| CliError::failure(format!("{context}: {}", chain(&error))))?;
    let jetstream = async_nats::jetstream::new(client);
    let recorded = match jetstream.get_stream(stream).await {
        Ok(found) => recorded_partitions(found.cached_info().config.description.as_deref()),
        // A missing stream, or none reachable: the source says so below, in its own words.
        Err(_) => None,
    };
    let failed = |error: SourceError| CliError::source(context, &error);
    let config = NatsSourceConfig::new(stream, recorded.unwrap_or(fallback))
        .map_err(failed)?
        .with_timeout(timeout);
    let source = NatsSource::new_with_config(jetstream, config)
        .await
        .map_err(failed)?;
    Ok(Box::new(source))
}

/// The count after [`PARTITIONS_MARKER`] in a stream's description, when there is one that
/// parses (the source refuses a malformed one itself).
fn recorded_partitions(description: Option<&str>) -> Option<u32> {
    let description = description?;
    let at = description.find(PARTITIONS_MARKER)?;
    let digits: String = description[at + PARTITIONS_MARKER.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok().filter(|count| *count > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_is_read_from_the_description() {
        assert_eq!(recorded_partitions(None), None);
        assert_eq!(recorded_partitions(Some("a log")), None);
        assert_eq!(
            recorded_partitions(Some(
                "checkpoint source log: subjects o.<partition>, checkpoint-partitions=8"
            )),
            Some(8)
        );
        assert_eq!(recorded_partitions(Some("checkpoint-partitions=x")), None);
        assert_eq!(recorded_partitions(Some("checkpoint-partitions=0")), None);
    }

    #[test]
    fn stream_names_are_checked() {
        assert!(check_stream_name("ORDERS").is_ok());
        assert!(check_stream_name("a b").is_err());
    }
}
