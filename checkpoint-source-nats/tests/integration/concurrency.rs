//! Writers on 8 subjects, readers restarting from random checkpoints.

use crate::history::{Plan, run};
use crate::support::{TestStream, seed};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_entry_is_read_once_in_order_across_restarts() {
    let seed = seed();
    println!("seed {seed} (CHECKPOINT_NATS_SEED replays it)");
    let stream = TestStream::new("history", 8).await;
    let plan = Plan {
        partitions: 8,
        writers: 4,
        per_writer: 400,
        pace: std::time::Duration::ZERO,
        tolerate_errors: false,
    };
    let (publish_errors, read_errors) = run(&stream, plan, seed, async {}).await;
    assert_eq!((publish_errors, read_errors), (0, 0));
    stream.delete().await;
}
