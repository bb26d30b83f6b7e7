//! The producer: appends the run's records to every partition at a steady pace while the
//! children project them (a task per partition, a record per request, acknowledged by the
//! broker before the next), and remembers where each one landed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use checkpoint_source_kafka::KafkaSource;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::{BoxError, PARTITIONS, record};

/// What was produced: each record's payload by partition and offset.
pub type Produced = BTreeMap<(u32, u64), String>;

/// Appends `records` records in all, spread over the partitions and over `over`. An append
/// that fails fails the run: it may have been stored all the same, and the topic would then
/// hold a record the producer cannot account for.
pub async fn produce(
    source: Arc<KafkaSource>,
    run: String,
    records: u64,
    over: Duration,
) -> Result<Produced, BoxError> {
    let per_partition = records.div_ceil(u64::from(PARTITIONS)).max(1);
    let pace = over / u32::try_from(per_partition)?;
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for partition in 0..PARTITIONS {
        let (source, run) = (Arc::clone(&source), run.clone());
        tasks.spawn(async move {
            let mut produced = Produced::new();
            let key = partition.to_string();
            for seq in 0..per_partition {
                tokio::time::sleep_until(started + pace * u32::try_from(seq)?).await;
                let payload = record::payload(&run, partition, seq);
                let offset = source
                    .append(partition, Some(&key), payload.clone())
                    .await?;
                if produced.insert((partition, offset), payload).is_some() {
                    return Err(format!("partition {partition}: offset {offset} twice").into());
                }
            }
            Ok::<_, BoxError>(produced)
        });
    }
    let mut produced = Produced::new();
    while let Some(partition) = tasks.join_next().await {
        produced.extend(partition??);
    }
    Ok(produced)
}
