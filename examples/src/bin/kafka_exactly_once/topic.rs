//! The run's topic: created fresh (a name of its own, so that no earlier run's records or
//! checkpoints mix in), and read back in full through the source once the producer is done.

use std::collections::BTreeMap;

use checkpoint_core::source::Source;
use checkpoint_source_kafka::{KafkaSource, KafkaSourceConfig};

use crate::{BoxError, PARTITIONS};

/// Records per read back.
const PAGE: usize = 1_000;

/// Creates the topic `name` of `PARTITIONS` partitions on the brokers `brokers` names
/// (`kafka://HOST:PORT[,HOST:PORT…]`) and connects to it; returns the source and the
/// topic's URL, for the children.
pub async fn create(brokers: &str, name: &str) -> Result<(KafkaSource, String), BoxError> {
    let hosts = brokers
        .strip_prefix("kafka://")
        .map(|hosts| hosts.trim_end_matches('/'))
        .ok_or_else(|| format!("--source {brokers}: not kafka://HOST:PORT"))?;
    if hosts.contains(['/', '?']) {
        return Err(format!(
            "--source {brokers}: name the brokers only (kafka://HOST:PORT); \
             the example creates a topic of its own"
        )
        .into());
    }
    let url = format!("kafka://{hosts}/{name}?partitions={PARTITIONS}");
    let config = KafkaSourceConfig::from_url(&url)?;
    KafkaSource::create_topic(&config, 1).await?;
    Ok((KafkaSource::connect(config).await?, url))
}

/// Every record of the topic, by partition and offset, with its payload as text.
pub async fn read_all(source: &dyn Source) -> Result<BTreeMap<(u32, u64), String>, BoxError> {
    let mut records = BTreeMap::new();
    for partition in 0..PARTITIONS {
        let Some(head) = source.head(partition).await? else {
            continue;
        };
        let mut from = 0;
        while from <= head {
            let page = source.read(partition, from, PAGE).await?;
            for entry in page.entries {
                let payload = String::from_utf8_lossy(&entry.payload).into_owned();
                records.insert((partition, entry.position), payload);
            }
            if page.next <= from {
                return Err(
                    format!("partition {partition}: a read at {from} made no progress").into(),
                );
            }
            from = page.next;
        }
    }
    Ok(records)
}

/// Where each partition ends: the checkpoint a subscription that read all of it stores (the
/// offset after the last record; the topic's last stable offset).
pub async fn ends(source: &dyn Source) -> Result<Vec<u64>, BoxError> {
    let mut ends = Vec::new();
    for partition in 0..PARTITIONS {
        ends.push(source.head(partition).await?.map_or(0, |head| head + 1));
    }
    Ok(ends)
}
