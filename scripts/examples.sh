#!/usr/bin/env bash
# Runs every example, each against the store it is written for; fails if any fails.
# Expects the servers of scripts/test.sh (DATABASE_URL, REDIS_URL, DYNAMODB_ENDPOINT) for the
# examples that use them.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

run() {
  printf '\n-- example: %s\n' "$*" >&2
  cargo run --locked --quiet -p checkpoint-examples --bin "$@"
}

run quickstart
run quickstart -- --store "${REDIS_URL:-redis://127.0.0.1:6379}"
run quickstart -- --store "${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
run lease_handover
dynamodb="${DYNAMODB_ENDPOINT:?set DYNAMODB_ENDPOINT: eval \"\$(bash scripts/services/dynamodb.sh up)\"}"
run lease_handover -- --store "dynamodb+http://${dynamodb#http://}/checkpoints_examples"
run custom_backend
for example in examples/src/bin/*.rs; do
  name=$(basename "$example" .rs)
  case "$name" in
    quickstart|lease_handover|custom_backend) ;;
    *) run "$name" ;;
  esac
done
