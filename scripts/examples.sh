#!/usr/bin/env bash
# Runs every example, each against the store it is written for; fails if any fails.
# Expects the servers of scripts/test.sh (DATABASE_URL, MYSQL_URL, REDIS_URL, DYNAMODB_ENDPOINT,
# NATS_URL, KAFKA_URL) for the examples that use them.
#
# The README's first command runs first, exactly as written: a plain build, SQLite only. Every
# other run turns on the examples' `all` feature (every store, every source and the conformance kit), so
# the examples build once more, with everything.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

example() {
  printf '\n-- example: %s\n' "$*" >&2
  cargo run --locked --quiet -p checkpoint-examples "$@"
}
run() {
  example --features all --bin "$@"
}

example --bin quickstart
run quickstart -- --store "${REDIS_URL:-redis://127.0.0.1:6379}"
run quickstart -- --store "${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
run quickstart -- --store "${MYSQL_URL:-mysql://root@127.0.0.1:3306/test}"
# The quick start's log elsewhere than SQLite, one flag away: a PostgreSQL event table, a
# JetStream stream, then a Kafka topic (each made for the run; the table and the stream are
# dropped after it, the topic stays on the broker, see examples/src/log.rs; the checkpoints
# stay in SQLite).
run quickstart -- --source "${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
run quickstart -- --source "${NATS_URL:-nats://127.0.0.1:4222}"
run quickstart -- --source "${KAFKA_URL:-kafka://127.0.0.1:9092}"
# The lease handover example on DynamoDB only: scripts/test.sh runs the same scenario on SQLite,
# PostgreSQL, MySQL and Redis as a test (examples/tests/processes.rs, which checks its summary),
# just before this script, and running it again here would cost about 13 s per backend for
# nothing new. DynamoDB is not one of that test's cases, so the example runs on it here, as before.
# (On its own, this script runs it on DynamoDB only; `cargo test -p checkpoint-examples --test
# processes` runs the SQLite case.)
dynamodb="${DYNAMODB_ENDPOINT:?set DYNAMODB_ENDPOINT: eval \"\$(bash scripts/services/dynamodb.sh up)\"}"
# Leases of 5 s there, not the example's 1.5 s: moto, a Python emulator, stalled every worker's
# renewals for more than 1.5 s at once in two CI runs on a loaded 2-core host (all leases lost
# together, nothing redone); the run's "no live worker loses a lease" needs a lease the store's
# stalls fit in. The test on the three other backends keeps the short lease.
# A DynamoDB store's URL is the table only (checkpoint-connect's one format, the command's too):
# the emulator's endpoint and its test credentials come from the AWS environment, which the
# worker processes inherit.
AWS_ENDPOINT_URL_DYNAMODB="$dynamodb" AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test \
  AWS_SECRET_ACCESS_KEY=test run lease_handover -- --store dynamodb://checkpoints_examples --lease-ms 5000
run custom_backend
for example in examples/src/bin/*.rs; do
  name=$(basename "$example" .rs)
  case "$name" in
    # subscription_metrics serves its metrics until stopped: the processes test runs the
    # binary for a few seconds, scrapes it and checks the dashboard against it.
    quickstart|lease_handover|custom_backend|subscription_metrics) ;;
    *) run "$name" ;;
  esac
done
