//! Read throughput of the Kafka source against a raw consume loop of the same records,
//! printed, never asserted.
//!
//! `cargo run --release -p checkpoint-source-kafka --example kafka_bench` with a broker on
//! `KAFKA_URL` (default `kafka://127.0.0.1:9092`; `scripts/services/kafka.sh up` starts one).
//! Makes a topic of its own (a broker cannot be asked to delete it through the source). Named
//! `kafka_bench`, not `bench`: cargo's examples of one workspace share an output folder, and
//! the NATS source has a `bench`.
//!
//! One partition of `RECORDS` records (produced 16 at a time, one record per request, as the
//! source's `append` does), read from 0 by the source in pages of `PAGE`, against the raw loop:
//! fetch requests of the same size on one connection, every record of every response decoded
//! and counted, the next fetch from after the last one. The raw loop drops nothing (no
//! read-committed filter, no page limit, no retry): the floor a reader could reach with the
//! same protocol library.

use std::time::Instant;

use bytes::{BufMut, Bytes, BytesMut};
use checkpoint_core::source::Source;
use checkpoint_source_kafka::{DEFAULT_MAX_BYTES, KafkaSource, KafkaSourceConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};
use kafka_protocol::records::RecordBatchDecoder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const RECORDS: u64 = 20_000;
const PAGE: usize = 500;
const PRODUCERS: u64 = 16;
/// Rounds of both loops, alternately; the median ratio is printed last.
const ROUNDS: usize = 5;
/// The raw loop's Fetch version: the highest the source speaks.
const FETCH_VERSION: i16 = 11;

type BenchResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> BenchResult {
    let url = std::env::var("KAFKA_URL").unwrap_or_else(|_| "kafka://127.0.0.1:9092".into());
    let hosts = url.strip_prefix("kafka://").unwrap_or(&url).to_owned();
    let topic = format!("bench_read_{}", std::process::id());
    let config = KafkaSourceConfig::new(hosts.split(','), topic.clone(), 1)?;
    KafkaSource::create_topic(&config, 1).await?;
    let source = std::sync::Arc::new(KafkaSource::connect(config.clone()).await?);
    let started = Instant::now();
    fill(&source).await?;
    println!(
        "filled {RECORDS} records in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let leader = hosts.split(',').next().unwrap_or_default().to_owned();
    let mut ratios = Vec::new();
    for round in 1..=ROUNDS {
        // A new source each round: one keeps its last fetch, which would serve a second
        // read of the same records without asking the broker.
        let ours = source_read(&KafkaSource::connect(config.clone()).await?).await?;
        let raw = raw_read(&leader, &topic).await?;
        println!(
            "round {round}: source {ours:.0} records/s, raw fetch loop {raw:.0} records/s, \
             ratio {:.2} ({RECORDS} records, pages of {PAGE}, fetches of {DEFAULT_MAX_BYTES} bytes)",
            ours / raw
        );
        ratios.push(ours / raw);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "median ratio over {ROUNDS} rounds: {:.2} (the broker's fetches dominate both loops: \
         compare rounds of one run, on a quiet machine)",
        ratios[ratios.len() / 2]
    );
    Ok(())
}

/// `RECORDS` records, `PRODUCERS` appends at a time.
async fn fill(source: &std::sync::Arc<KafkaSource>) -> BenchResult {
    let mut tasks = Vec::new();
    for producer in 0..PRODUCERS {
        let source = std::sync::Arc::clone(source);
        tasks.push(tokio::spawn(async move {
            for n in (producer..RECORDS).step_by(PRODUCERS as usize) {
                source
                    .append(0, None, format!("bench-record-{n:05}"))
                    .await?;
            }
            Ok::<(), checkpoint_core::source::SourceError>(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// The source, from 0 in pages of [`PAGE`]: records per second.
async fn source_read(source: &KafkaSource) -> BenchResult<f64> {
    let started = Instant::now();
    let (mut from, mut read) = (0, 0u64);
    while read < RECORDS {
        let page = source.read(0, from, PAGE).await?;
        if page.entries.is_empty() {
            return Err(format!("the source read {read} of {RECORDS} records").into());
        }
        read += page.entries.len() as u64;
        from = page.next;
    }
    Ok(read as f64 / started.elapsed().as_secs_f64())
}

/// The raw loop on one connection to the (one) broker: records per second.
async fn raw_read(address: &str, topic: &str) -> BenchResult<f64> {
    let mut stream = TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let started = Instant::now();
    let (mut offset, mut read, mut correlation) = (0i64, 0u64, 0);
    while read < RECORDS {
        correlation += 1;
        let response = fetch(&mut stream, topic, offset, correlation).await?;
        let Some(mut records) = response
            .responses
            .into_iter()
            .flat_map(|t| t.partitions)
            .find_map(|p| p.records)
        else {
            return Err(format!("the raw loop read {read} of {RECORDS} records").into());
        };
        let mut last = None;
        while records.len() >= 12 {
            let length = i32::from_be_bytes([records[8], records[9], records[10], records[11]]);
            let total = 12 + usize::try_from(length)?;
            if records.len() < total {
                break; // cut short: fetched again next time
            }
            let mut batch = records.split_to(total);
            for record in RecordBatchDecoder::decode(&mut batch)?.records {
                if record.offset >= offset && !record.control {
                    read += 1;
                    last = Some(record.offset);
                }
            }
        }
        offset = last.ok_or("a fetch with no new record")? + 1;
    }
    Ok(read as f64 / started.elapsed().as_secs_f64())
}

async fn fetch(
    stream: &mut TcpStream,
    topic: &str,
    offset: i64,
    correlation: i32,
) -> BenchResult<FetchResponse> {
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_bytes(DEFAULT_MAX_BYTES)
        .with_isolation_level(1)
        .with_session_epoch(-1)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(DEFAULT_MAX_BYTES),
                ]),
        ]);
    let header = RequestHeader::default()
        .with_request_api_key(ApiKey::Fetch as i16)
        .with_request_api_version(FETCH_VERSION)
        .with_correlation_id(correlation);
    let mut frame = BytesMut::new();
    frame.put_i32(0);
    header.encode(&mut frame, FetchRequest::header_version(FETCH_VERSION))?;
    request.encode(&mut frame, FETCH_VERSION)?;
    let length = i32::try_from(frame.len() - 4)?;
    frame[..4].copy_from_slice(&length.to_be_bytes());
    stream.write_all(&frame).await?;
    let length = usize::try_from(stream.read_i32().await?)?;
    let mut body = vec![0; length];
    stream.read_exact(&mut body).await?;
    let mut body = Bytes::from(body);
    ResponseHeader::decode(&mut body, FetchResponse::header_version(FETCH_VERSION))?;
    Ok(FetchResponse::decode(&mut body, FETCH_VERSION)?)
}
