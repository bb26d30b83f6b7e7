//! The subscription fleet on a Kafka topic, checkpoints in PostgreSQL: `KAFKA_URL` names the
//! brokers only (`kafka://HOST:PORT`), the run's log is a topic of its own, left there after it
//! (`checkpoint_examples::log::remove_log` says why).
//! Like every case whose features are on, it fails (never skips) without its servers.

use super::{run_fleet, server};

#[test]
fn subscription_on_kafka_and_postgres() {
    let store = server("DATABASE_URL", "postgres");
    let source = server("KAFKA_URL", "source-kafka");
    let summary = run_fleet("fleet-kafka-postgres", Some((&store, &source)), None);
    // `run_fleet` checked the verdict; this says it was reached on the topic.
    let shown = summary.get("source").map(String::as_str);
    assert_eq!(shown, Some(source.as_str()), "{summary:?}");
}
