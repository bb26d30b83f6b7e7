//! Read throughput and publish → reader latency of the NATS source, printed, never asserted.
//!
//! `cargo run --release -p checkpoint-source-nats --example bench` with NATS on `NATS_URL`
//! (default `nats://127.0.0.1:4222`). Makes a stream of its own and deletes it.
//!
//! - Throughput: one partition of `ENTRIES` messages read from 0 in pages of `PAGE`, against
//!   the raw pull consumer fetching the same messages in batches of the same size.
//! - Latency at rest: a reader loops `wait` + `read`; a writer publishes one message every
//!   5 ms; the time from before the publish to the reader holding the entry.

use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer::pull};
use checkpoint_core::source::{Source, SourceError};
use checkpoint_source_nats::{NatsSource, NatsSourceConfig};
use futures_util::StreamExt;

const ENTRIES: usize = 20_000;
const PAGE: usize = 500;
const LATENCY_SAMPLES: usize = 400;

type BenchResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> BenchResult {
    let url = std::env::var("NATS_URL").unwrap_or_else(|_| "nats://127.0.0.1:4222".into());
    let context = jetstream::new(async_nats::connect(&url).await?);
    let name = format!("BENCH_{}", std::process::id());
    let config = NatsSourceConfig::new(name.clone(), 2)?;
    NatsSource::create_stream(&context, &config).await?;
    let source = NatsSource::new_with_config(context.clone(), config).await?;
    let result = run(&context, &source, &name).await;
    context.delete_stream(&name).await?;
    result
}

async fn run(context: &jetstream::Context, source: &NatsSource, name: &str) -> BenchResult {
    fill(context, name).await?;
    for round in 1..=3 {
        let ours = source_read(source).await?;
        let raw = raw_read(context, name).await?;
        println!(
            "round {round}: source {ours:.0} entries/s, raw consumer {raw:.0} entries/s, ratio {:.2} \
             ({ENTRIES} entries, pages of {PAGE})",
            ours / raw
        );
    }
    let (going_on, elsewhere) = per_read(source).await?;
    println!(
        "one read of 10 entries, p50: going on from the last next (kept consumer) {going_on:?}, \
         from elsewhere (a new consumer) {elsewhere:?}"
    );
    let mut latencies = latency(source).await?;
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    println!(
        "publish -> reader at rest ({} samples, wait + read): p50 {:?}, p99 {:?}, max {:?}",
        latencies.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
    Ok(())
}

/// `ENTRIES` messages on partition 0, published concurrently, then acknowledged.
async fn fill(context: &jetstream::Context, name: &str) -> BenchResult {
    let subject = format!("{name}.0");
    let mut acks = Vec::with_capacity(1_000);
    for i in 0..ENTRIES {
        acks.push(
            context
                .publish(subject.clone(), format!("entry {i}").into())
                .await?,
        );
        if acks.len() == 1_000 {
            for ack in acks.drain(..) {
                ack.await?;
            }
        }
    }
    for ack in acks {
        ack.await?;
    }
    Ok(())
}

/// Entries/s of the source reading partition 0 from 0 to its end.
async fn source_read(source: &NatsSource) -> Result<f64, SourceError> {
    let started = Instant::now();
    let (mut from, mut read) = (0, 0);
    while read < ENTRIES {
        let page = source.read(0, from, PAGE).await?;
        read += page.entries.len();
        from = page.next;
    }
    Ok(read as f64 / started.elapsed().as_secs_f64())
}

/// Entries/s of a raw pull consumer (created once) fetching the same messages.
async fn raw_read(context: &jetstream::Context, name: &str) -> Result<f64, async_nats::Error> {
    let stream = context.get_stream(name).await?;
    let started = Instant::now();
    let consumer = stream
        .create_consumer(pull::Config {
            filter_subject: format!("{name}.0"),
            ack_policy: jetstream::consumer::AckPolicy::None,
            memory_storage: true,
            ..Default::default()
        })
        .await?;
    let mut read = 0;
    while read < ENTRIES {
        let mut batch = consumer.fetch().max_messages(PAGE).messages().await?;
        while let Some(message) = batch.next().await {
            let message = message?;
            std::hint::black_box(&message.payload);
            read += 1;
        }
    }
    let rate = read as f64 / started.elapsed().as_secs_f64();
    stream.delete_consumer(&consumer.cached_info().name).await?;
    Ok(rate)
}

/// The median time of a read of 10 entries going on from the previous `next`, and of one
/// from a position no kept consumer stands at.
async fn per_read(source: &NatsSource) -> Result<(Duration, Duration), SourceError> {
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (mut going_on, mut elsewhere) = (Vec::new(), Vec::new());
    let mut from = 0;
    for _ in 0..500 {
        let started = Instant::now();
        from = source.read(0, from, 10).await?.next;
        going_on.push(started.elapsed());
    }
    for i in 0..200u64 {
        let started = Instant::now();
        source.read(0, 1 + i * 97 % ENTRIES as u64, 10).await?;
        elsewhere.push(started.elapsed());
    }
    Ok((median(going_on), median(elsewhere)))
}

/// Publish → reader latencies on partition 1, one message every 5 ms.
async fn latency(source: &NatsSource) -> Result<Vec<Duration>, SourceError> {
    let mut from = source.read(1, 0, 1).await?.next;
    let mut latencies = Vec::with_capacity(LATENCY_SAMPLES);
    for i in 0..LATENCY_SAMPLES {
        let reader = async {
            loop {
                source.wait(1, from).await?;
                let page = source.read(1, from, 10).await?;
                from = page.next;
                if !page.entries.is_empty() {
                    return Ok::<Instant, SourceError>(Instant::now());
                }
            }
        };
        let sent = Instant::now();
        let writer = source.append(1, None, format!("latency {i}").into_bytes());
        let (received, appended) = tokio::join!(reader, writer);
        appended?;
        latencies.push(received?.duration_since(sent));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(latencies)
}
