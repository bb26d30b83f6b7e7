//! A server restart while writers publish and readers read: no acknowledged entry lost or
//! skipped, and the source goes on by itself once the server is back.

use std::process::Command;
use std::time::{Duration, Instant};

use checkpoint_core::source::Source;
use checkpoint_source_nats::NatsSource;

use crate::history::{Plan, run};
use crate::support::{SERVER, START_SERVER, TestStream, seed, url};

/// The running server's pid (`pgrep -x nats-server`).
fn server_pid() -> Option<u32> {
    let output = Command::new("pgrep")
        .args(["-x", "nats-server"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .and_then(|line| line.trim().parse().ok())
}

/// Starts the server with the machine's command (a no-op when it runs).
fn start_server() {
    let status = Command::new(START_SERVER[0])
        .args(&START_SERVER[1..])
        .status()
        .expect("start-stop-daemon runs");
    assert!(status.success(), "starting nats-server: {status}");
}

/// Waits until the server answers a JetStream request about `stream`, up to `limit`.
async fn until_up(stream: &str, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let problem = match async_nats::connect(url()).await {
            Ok(client) => match async_nats::jetstream::new(client).get_stream(stream).await {
                Ok(_) => return,
                Err(e) => e.to_string(),
            },
            Err(e) => e.to_string(),
        };
        assert!(
            Instant::now() < deadline,
            "NATS not back within {limit:?}: {problem}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// SIGTERM to the server, wait for it to exit, start it again and wait until it answers.
async fn restart_server(stream: &str) -> Duration {
    let pid = server_pid().expect("a running nats-server (pgrep -x nats-server)");
    let stopped = Instant::now();
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            stopped.elapsed() < Duration::from_secs(30),
            "nats-server did not stop"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    start_server();
    until_up(stream, Duration::from_secs(30)).await;
    stopped.elapsed()
}

/// Restarts the server if a failed test left it down.
struct LeaveRunning;

impl Drop for LeaveRunning {
    fn drop(&mut self) {
        if server_pid().is_none() {
            start_server();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_loses_and_skips_no_acknowledged_entry() {
    let _exclusive = SERVER.write().await;
    let _leave_running = LeaveRunning;
    let seed = seed();
    println!("seed {seed} (CHECKPOINT_NATS_SEED replays it)");
    // Partitions 0..8 for the writers and readers, 8 for a wait that spans the restart.
    let stream = TestStream::unlocked("restart", 9).await;
    let source = stream.source().await;
    assert_eq!(source.read(0, 0, 1).await.unwrap().next, 1);
    let waiting = {
        let config = stream
            .config
            .clone()
            .with_wait_expiry(Duration::from_secs(2));
        let waiter = NatsSource::new_with_config(stream.context.clone(), config)
            .await
            .unwrap();
        // A reader's loop: wait, read; a failed wait (the server is away) is tried again.
        tokio::spawn(async move {
            let mut failed = 0;
            loop {
                match waiter.wait(8, 1).await {
                    Ok(()) => {
                        let page = waiter.read(8, 1, 10).await;
                        if page.is_ok_and(|page| !page.entries.is_empty()) {
                            return (failed, Instant::now());
                        }
                    }
                    Err(_) => {
                        failed += 1;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        })
    };
    let plan = Plan {
        partitions: 8,
        writers: 4,
        per_writer: 250,
        pace: Duration::from_millis(4),
        tolerate_errors: true,
    };
    let (publish_errors, read_errors) = run(&stream, plan, seed, async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let down = restart_server(stream.config.stream()).await;
        println!("server down and back in {down:?}");
    })
    .await;
    println!("{publish_errors} publishes and {read_errors} reads failed around the restart");
    // A source made before the restart reads and appends again on its own.
    let position = source.append(0, None, b"after".to_vec()).await.unwrap();
    let page = source.read(0, position, 10).await.unwrap();
    assert_eq!(page.entries.len(), 1);
    assert_eq!(source.head(0).await.unwrap(), Some(position));
    // The wait that began before the restart wakes on an append after it.
    assert!(!waiting.is_finished(), "woken with nothing appended");
    let appended = Instant::now();
    source.append(8, None, b"late".to_vec()).await.unwrap();
    let (failed, woke) = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("a wait across the restart wakes within 10 s")
        .unwrap();
    println!(
        "the wait across the restart ({failed} waits failed) woke {:?} after the append",
        woke.saturating_duration_since(appended)
    );
    stream.delete().await;
}
