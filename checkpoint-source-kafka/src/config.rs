//! What a [`KafkaSource`](crate::KafkaSource) reads: the brokers, the topic, how many
//! partitions it expects, and its timeouts.

use std::time::Duration;

use checkpoint_core::source::SourceError;

/// The default bound of one read, head or append: [`KafkaSourceConfig::with_timeout`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The default longest fetch a wait leaves with the broker: [`KafkaSourceConfig::with_wait_max`].
pub const DEFAULT_WAIT_MAX: Duration = Duration::from_secs(5);
/// The default most bytes one read asks for: [`KafkaSourceConfig::with_max_bytes`].
pub const DEFAULT_MAX_BYTES: i32 = 1 << 20;

/// The brokers, topic and partition count of a source, and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaSourceConfig {
    pub(crate) bootstrap: Vec<String>,
    pub(crate) topic: String,
    pub(crate) partitions: u32,
    pub(crate) timeout: Duration,
    pub(crate) wait_max: Duration,
    pub(crate) max_bytes: i32,
}

impl KafkaSourceConfig {
    /// A source over `topic`, which has (at least) `partitions` partitions, reached through the
    /// brokers `bootstrap` (`host:port` each; one is enough, the others are tried when it does
    /// not answer; the source learns the rest of the cluster from them).
    ///
    /// Fails with [`SourceError::InvalidInput`] for no broker, a broker address without a
    /// port, a topic name Kafka refuses, or no partition.
    pub fn new<I, S>(
        bootstrap: I,
        topic: impl Into<String>,
        partitions: u32,
    ) -> Result<Self, SourceError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let bootstrap: Vec<String> = bootstrap.into_iter().map(Into::into).collect();
        check_bootstrap(&bootstrap)?;
        let topic = topic.into();
        check_topic(&topic)?;
        if partitions == 0 {
            return Err(SourceError::InvalidInput {
                argument: "partitions",
                reason: "a source has at least one partition".into(),
            });
        }
        Ok(Self {
            bootstrap,
            topic,
            partitions,
            timeout: DEFAULT_TIMEOUT,
            wait_max: DEFAULT_WAIT_MAX,
            max_bytes: DEFAULT_MAX_BYTES,
        })
    }

    /// A source from a URL: `kafka://HOST:PORT[,HOST:PORT…]/TOPIC?partitions=N`.
    ///
    /// Fails with [`SourceError::InvalidInput`] for another scheme, no topic, no or a bad
    /// `partitions`, or an unknown parameter.
    pub fn from_url(url: &str) -> Result<Self, SourceError> {
        let invalid = |reason: String| SourceError::InvalidInput {
            argument: "url",
            reason,
        };
        let rest = url
            .strip_prefix("kafka://")
            .ok_or_else(|| invalid(format!("{url:?} does not start with kafka://")))?;
        let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (hosts, topic) = location.split_once('/').ok_or_else(|| {
            invalid(format!(
                "{url:?} names no topic: kafka://HOST:PORT/TOPIC?partitions=N"
            ))
        })?;
        let mut partitions = None;
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            match pair.split_once('=') {
                Some(("partitions", value)) => {
                    partitions = Some(value.parse::<u32>().map_err(|_| {
                        invalid(format!("partitions={value:?} is not a partition count"))
                    })?);
                }
                _ => {
                    return Err(invalid(format!(
                        "unknown parameter {pair:?}: only partitions=N"
                    )));
                }
            }
        }
        let partitions = partitions.ok_or_else(|| {
            invalid(format!(
                "{url:?} does not say how many partitions: add ?partitions=N"
            ))
        })?;
        Self::new(hosts.split(','), topic, partitions)
    }

    /// Bounds each read, head and append (retries after a broker restart or a leader change
    /// included) by `timeout` instead of [`DEFAULT_TIMEOUT`]; it fails with
    /// [`SourceError::Timeout`] when it elapses.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(10));
        self
    }

    /// How long one fetch of [`wait`](checkpoint_core::source::Source::wait) stays with the
    /// broker before it is sent again ([`DEFAULT_WAIT_MAX`]): a wait goes on until a record
    /// arrives; this only bounds how long the broker holds one request.
    pub fn with_wait_max(mut self, wait_max: Duration) -> Self {
        self.wait_max = wait_max.clamp(Duration::from_millis(10), Duration::from_secs(60));
        self
    }

    /// Asks for at most `max_bytes` of records per read ([`DEFAULT_MAX_BYTES`], clamped to
    /// 1 KiB–64 MiB). A broker returns one whole batch even when it is larger, so a read always
    /// makes progress.
    pub fn with_max_bytes(mut self, max_bytes: i32) -> Self {
        self.max_bytes = max_bytes.clamp(1 << 10, 64 << 20);
        self
    }

    /// The brokers the source starts from.
    pub fn bootstrap(&self) -> &[String] {
        &self.bootstrap
    }

    /// The topic's name.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// How many partitions the source expects (the topic may have more: it grew).
    pub fn partitions(&self) -> u32 {
        self.partitions
    }
}

fn check_bootstrap(bootstrap: &[String]) -> Result<(), SourceError> {
    if bootstrap.is_empty() {
        return Err(SourceError::InvalidInput {
            argument: "bootstrap",
            reason: "name at least one broker, as host:port".into(),
        });
    }
    for address in bootstrap {
        let port = address
            .rsplit_once(':')
            .map(|(host, port)| (host, port.parse::<u16>()));
        if !matches!(port, Some((host, Ok(_))) if !host.is_empty()) {
            return Err(SourceError::InvalidInput {
                argument: "bootstrap",
                reason: format!("{address:?} is not host:port"),
            });
        }
    }
    Ok(())
}

/// Kafka's own rule: 1 to 249 of `[a-zA-Z0-9._-]`, neither `.` nor `..`.
fn check_topic(topic: &str) -> Result<(), SourceError> {
    let valid = (1..=249).contains(&topic.len())
        && topic != "."
        && topic != ".."
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(SourceError::InvalidInput {
            argument: "topic",
            reason: format!(
                "{topic:?} is not a Kafka topic name: 1 to 249 letters, digits, '.', '_' or '-', \
                 not \".\" or \"..\""
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_the_brokers_the_topic_and_the_partitions() {
        let config = KafkaSourceConfig::from_url("kafka://a:9092,b:9093/orders.v1?partitions=8")
            .expect("a valid URL");
        assert_eq!(config.bootstrap(), ["a:9092", "b:9093"]);
        assert_eq!(config.topic(), "orders.v1");
        assert_eq!(config.partitions(), 8);
    }

    #[test]
    fn a_url_without_topic_partitions_or_port_is_refused_with_what_to_write() {
        for (url, says) in [
            ("kafka://a:9092", "names no topic"),
            ("kafka://a:9092/t", "add ?partitions=N"),
            ("kafka://a:9092/t?partitions=x", "not a partition count"),
            ("kafka://a:9092/t?partitions=2&acks=1", "unknown parameter"),
            ("kafka://a/t?partitions=2", "not host:port"),
            (
                "kafka://a:9092/bad topic?partitions=2",
                "not a Kafka topic name",
            ),
            (
                "nats://a:4222/t?partitions=2",
                "does not start with kafka://",
            ),
            ("kafka://a:9092/t?partitions=0", "at least one partition"),
        ] {
            let error = KafkaSourceConfig::from_url(url).expect_err(url).to_string();
            assert!(error.contains(says), "{url}: {error}");
        }
    }
}
