#!/usr/bin/env bash
# The full benchmark of every checkpoint store, on the servers the test command uses:
#
#   bash scripts/bench.sh [--smoke] [--backends postgres,redis,dynamodb,sqlite,mysql,kafka] [--workloads stores,committer,workers,scale,subscriptions] [--markdown PATH]
#
# It starts what the benchmark needs the way scripts/test.sh does (the machine's PostgreSQL,
# MariaDB and Redis if they are down, the local DynamoDB emulator), then runs the release build
# of checkpoint-bench with the given arguments. The table goes to stdout (and to PATH with
# --markdown); progress goes to stderr. See docs/performance.md for how to read it.
#
# DATABASE_URL, MYSQL_URL, REDIS_URL and DYNAMODB_ENDPOINT, when set, point it at other
# servers (DYNAMODB_ENDPOINT set means no local emulator is started). `kafka` is not among the
# default backends: `--backends …,kafka` adds the Kafka source + PostgreSQL store pair to the
# subscriptions' rows, and starts the local broker (scripts/services/kafka.sh up, which installs
# it the first time) unless KAFKA_URL points at one.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/services/machine.sh up
if [[ -z "${DYNAMODB_ENDPOINT:-}" ]]; then
  eval "$(bash scripts/services/dynamodb.sh up)"
fi

wants_kafka=false
previous=""
for arg in "$@"; do
  if [[ "$previous" == "--backends" && ",${arg}," == *",kafka,"* ]]; then
    wants_kafka=true
  fi
  previous="$arg"
done
if [[ "$wants_kafka" == true && -z "${KAFKA_URL:-}" ]]; then
  # Captured first: a broker that fails to start stops the run here.
  kafka_exports=$(bash scripts/services/kafka.sh up)
  eval "$kafka_exports"
fi

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
export MYSQL_URL="${MYSQL_URL:-mysql://root@127.0.0.1:3306/test}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export DYNAMODB_ENDPOINT

exec cargo run --release -p checkpoint-bench --features crash -- "$@"
