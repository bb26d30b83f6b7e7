//! The supervisor: the run's topic and read model, the producer, the children and their
//! SIGKILLs, and the verdict.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use checkpoint_source_kafka::KafkaSource;
use tokio::task::JoinHandle;

use crate::children::Children;
use crate::engine::Db;
use crate::producer::{self, Produced};
use crate::verdict::{Outcome, Verdict};
use crate::{BoxError, CHILDREN, PARTITIONS, topic};

/// At least this many SIGKILLs, however soon the producer is done.
const MIN_KILLS: u64 = 5;
/// The pause before each kill, in milliseconds: about a lease, so that most children live
/// long enough to take partitions over and project.
const KILL_EVERY_MS: std::ops::RangeInclusive<u64> = 1_000..=1_500;
/// How long the last children get to reach the end of every partition.
const FINISH_WITHIN: Duration = Duration::from_secs(60);

/// The supervisor's flags.
#[derive(Debug)]
pub struct Options {
    pub store: String,
    /// The brokers: `kafka://HOST:PORT`.
    pub source: String,
    pub records: u64,
    pub produce_for: Duration,
    pub summary: Option<PathBuf>,
}

/// The SIGKILLs: how many, and how many hit a child that had committed rows since the kill
/// before (it held partitions and was projecting).
#[derive(Debug, Default)]
struct Kills {
    kills: u64,
    while_projecting: u64,
}

/// Runs the whole scenario and prints its verdict; fails on any mismatch.
pub async fn run(options: Options) -> Result<(), BoxError> {
    let started = Instant::now();
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let run = format!("kafka-exactly-once-{since_epoch}-{}", std::process::id());
    let db = Db::open(&options.store).await?;
    db.prepare().await?;
    let (source, topic_url) = topic::create(&options.source, &run).await?;
    let source = Arc::new(source);
    println!(
        "run {run}: topic of {PARTITIONS} partitions, read model in {} ({CHILDREN} children, \
         {} records over {:?})",
        db.name(),
        options.records,
        options.produce_for
    );
    let mut children = Children::new(&options.store, &topic_url, &run);
    for _ in 0..CHILDREN {
        children.start()?;
    }
    let producer = tokio::spawn(producer::produce(
        Arc::clone(&source),
        run.clone(),
        options.records,
        options.produce_for,
    ));
    let kills = kill_while_producing(&mut children, &db, &run, &producer).await?;
    let produced = producer.await??;
    println!(
        "produced {} records in {:.1} s; the children left finish",
        produced.len(),
        started.elapsed().as_secs_f64()
    );
    let ends = topic::ends(&*source).await?;
    finish(&mut children, &db, &run, &ends).await?;
    let verdict = judge(&db, &source, &run, &produced, &ends).await?;
    report(verdict, &children, &kills, &db, started, &options).await?;
    db.delete(&run).await
}

/// Every 1-1.5 s, SIGKILLs a child and starts another, until the producer is done and at
/// least `MIN_KILLS` were killed. The victim is picked at random among the children that
/// committed rows since the last kill, else among those that ever did, else among all.
async fn kill_while_producing(
    children: &mut Children,
    db: &Db,
    run: &str,
    producer: &JoinHandle<Result<Produced, BoxError>>,
) -> Result<Kills, BoxError> {
    let mut kills = Kills::default();
    let mut committed: BTreeMap<String, u64> = BTreeMap::new();
    while !producer.is_finished() || kills.kills < MIN_KILLS {
        tokio::time::sleep(Duration::from_millis(fastrand::u64(KILL_EVERY_MS))).await;
        children.check_running()?;
        let (mut projecting, mut ever) = (Vec::new(), Vec::new());
        for id in children.ids() {
            let now = db.count(run, Some(&id)).await?;
            let before = committed.insert(id.clone(), now).unwrap_or(0);
            if now > before {
                projecting.push(id.clone());
            }
            if now > 0 {
                ever.push(id);
            }
        }
        let all = children.ids();
        let pool = [&projecting, &ever, &all]
            .into_iter()
            .find(|ids| !ids.is_empty())
            .ok_or("no child is running")?;
        let victim = pool[fastrand::usize(..pool.len())].clone();
        children.kill(&victim).await?;
        kills.kills += 1;
        let was_projecting = projecting.contains(&victim);
        kills.while_projecting += u64::from(was_projecting);
        println!(
            "   {victim}: SIGKILLed ({} rows committed by it{})",
            committed.get(&victim).copied().unwrap_or(0),
            if was_projecting {
                ", some since the last kill"
            } else {
                ""
            }
        );
        children.start()?;
    }
    Ok(kills)
}

/// Lets the children run until every partition's checkpoint is at its end (or
/// `FINISH_WITHIN` passed: the verdict then says what is missing), then stops them gracefully.
async fn finish(children: &mut Children, db: &Db, run: &str, ends: &[u64]) -> Result<(), BoxError> {
    let deadline = Instant::now() + FINISH_WITHIN;
    loop {
        children.check_running()?;
        let mut at_end = true;
        for (partition, end) in (0..PARTITIONS).zip(ends) {
            at_end &= db.checkpoint(run, partition).await?.unwrap_or(0) >= *end;
        }
        if at_end {
            break;
        }
        if Instant::now() > deadline {
            println!("not every checkpoint reached its partition's end within {FINISH_WITHIN:?}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    children.stop_all().await
}

/// Reads the topic back in full through the source and compares the read model with it.
async fn judge(
    db: &Db,
    source: &KafkaSource,
    run: &str,
    produced: &Produced,
    ends: &[u64],
) -> Result<Verdict, BoxError> {
    let topic = topic::read_all(source).await?;
    let rows = db.rows(run).await?;
    let mut checkpoints = Vec::new();
    for (partition, end) in (0..PARTITIONS).zip(ends) {
        checkpoints.push((db.checkpoint(run, partition).await?, *end));
    }
    Ok(Verdict::new(&Outcome {
        produced,
        topic: &topic,
        rows: &rows,
        checkpoints: &checkpoints,
    }))
}

/// Prints the summary line (and writes the summary file); fails when the verdict found a
/// mismatch, keeping the run's rows to look at.
async fn report(
    mut verdict: Verdict,
    children: &Children,
    kills: &Kills,
    db: &Db,
    started: Instant,
    options: &Options,
) -> Result<(), BoxError> {
    verdict.add("kills", kills.kills);
    verdict.add("kills_while_projecting", kills.while_projecting);
    verdict.add("children_started", children.started);
    verdict.add("children_exited", children.exited);
    verdict.add("store", db.name());
    verdict.add("elapsed", format!("{:.1}", started.elapsed().as_secs_f64()));
    println!("{}", verdict.line());
    if let Some(path) = &options.summary {
        tokio::fs::write(path, verdict.lines()).await?;
    }
    if verdict.problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the read model is not the topic exactly once: {}",
            verdict.problems.join("; ")
        )
        .into())
    }
}
