#!/usr/bin/env bash
# The full benchmark of every checkpoint store, on the servers the test command uses:
#
#   bash scripts/bench.sh [--smoke] [--backends postgres,redis,dynamodb,sqlite,mysql] [--workloads stores,committer,workers,scale,subscriptions] [--markdown PATH]
#
# It starts what the benchmark needs the way scripts/test.sh does (the machine's PostgreSQL,
# MariaDB and Redis if they are down, the local DynamoDB emulator), then runs the release build
# of checkpoint-bench with the given arguments. The table goes to stdout (and to PATH with
# --markdown); progress goes to stderr. See docs/performance.md for how to read it.
#
# DATABASE_URL, MYSQL_URL, REDIS_URL and DYNAMODB_ENDPOINT, when set, point it at other
# servers (DYNAMODB_ENDPOINT set means no local emulator is started).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

bash scripts/services/machine.sh up
if [[ -z "${DYNAMODB_ENDPOINT:-}" ]]; then
  eval "$(bash scripts/services/dynamodb.sh up)"
fi

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
export MYSQL_URL="${MYSQL_URL:-mysql://root@127.0.0.1:3306/test}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
export DYNAMODB_ENDPOINT

exec cargo run --release -p checkpoint-bench --features crash -- "$@"
