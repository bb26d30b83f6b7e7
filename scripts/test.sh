#!/usr/bin/env bash
# The whole test suite, every backend on real servers, from a fresh machine:
#
#   bash scripts/test.sh
#
# It starts what the tests need (the machine's PostgreSQL, MariaDB, Redis and NATS if they are
# down, a local Redis Cluster, two local DynamoDB-compatible servers: moto and dynalite, a
# Kafka-protocol broker: tansu, built from crates.io the first time), points
# the tests at them through environment variables, runs formatting and lint checks, every test
# of the workspace, the docs and packages of every library crate, every example and a short
# benchmark run, and stops the servers it started again. `.ci/run` calls exactly
# this.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf '\n== %s\n' "$*" >&2; }

# The Kafka-protocol broker (tansu, scripts/services/kafka.sh) is built from crates.io when it is
# missing: minutes on 2 cores (docs/kafka-broker.md). The build starts here, in the background,
# so that it overlaps the lints' build of the workspace; the Kafka part below waits for it. (A
# run that stops before that leaves it to finish; a second install waits for it on its lock.)
mkdir -p .local/kafka
bash scripts/services/kafka.sh install >.local/kafka/install.out 2>&1 &
kafka_install_pid=$!

log "PostgreSQL, MariaDB, Redis and NATS"
bash scripts/services/machine.sh up
# The operator fleet's test drives `checkpoint status --watch` through a real terminal: tmux.
command -v tmux >/dev/null || apt-get install -y --no-install-recommends tmux \
  || { apt-get update && apt-get install -y --no-install-recommends tmux; }
# checkpoint serve's page runs in Debian's Chromium in the command's tests (the package lists
# are refreshed first only when the install cannot find it).
command -v chromium >/dev/null || apt-get install -y --no-install-recommends chromium \
  || { apt-get update && apt-get install -y --no-install-recommends chromium; }

# Servers the project starts itself; each prints the export lines for its address. The output
# is captured first so that a service that fails to start stops the run here (an `eval` of a
# failed command substitution would not).
# All of them are stopped again at the end, whatever the outcome: a server left running belongs
# to this checkout, and the same scripts of another checkout on the machine refuse its port.
stop_services() {
  bash scripts/services/redis-cluster.sh down || true
  bash scripts/services/nats-cluster.sh down || true
  bash scripts/services/dynamodb.sh down || true
  bash scripts/services/dynalite.sh down || true
  bash scripts/services/kafka.sh down || true
}
trap stop_services EXIT
cluster_exports=$(bash scripts/services/redis-cluster.sh up)
eval "$cluster_exports"
# Three NATS servers on 4231-4233 (the machine's NATS keeps 4222): checkpoint-source-nats's
# cluster test kills and restarts one of them through the same script.
nats_cluster_exports=$(bash scripts/services/nats-cluster.sh up)
eval "$nats_cluster_exports"
dynamodb_exports=$(bash scripts/services/dynamodb.sh up)
eval "$dynamodb_exports"
dynalite_exports=$(bash scripts/services/dynalite.sh up)
eval "$dynalite_exports"
: "${REDIS_CLUSTER_URLS:?the Redis Cluster script did not say where the cluster is}"
: "${NATS_CLUSTER_URLS:?the NATS cluster script did not say where the cluster is}"
: "${DYNAMODB_ENDPOINT:?the DynamoDB script did not say where the server is}"
: "${DYNALITE_ENDPOINT:?the dynalite script did not say where the server is}"

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
# checkpoint-mysql's tests, and the MySQL cases of checkpoint-connect, checkpoint-subscription
# (the transactional handler), the command and the examples: the machine's MariaDB.
export MYSQL_URL="${MYSQL_URL:-mysql://root@127.0.0.1:3306/test}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
# The NATS source's tests (checkpoint-source-nats), one of which restarts the server with the
# machine's command (the tests of one binary run apart from the others' binaries).
export NATS_URL="${NATS_URL:-nats://127.0.0.1:4222}"
export CHECKPOINT_HISTORIES="${CHECKPOINT_HISTORIES:-256}"
# Backtraces make a failing case readable; the kit's own messages say which clause broke.
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

log "Formatting and lints"
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The examples' backends are features (off in the workspace run above): lint them all too.
cargo clippy -p checkpoint-examples --all-features --all-targets --locked -- -D warnings
cargo clippy -p checkpoint-bench --features crash --all-targets --locked -- -D warnings
# The command's sources are features too (`source-nats`, `source-kafka`).
cargo clippy -p checkpoint-store-cli --all-features --all-targets --locked -- -D warnings
# The facade's stores, logs, `connect`, `tls` and `metrics` are features (SQLite alone by default).
cargo clippy -p checkpoint --all-features --all-targets --locked -- -D warnings

# The tests' binaries are compiled while the broker's install may still run: on a fresh machine
# the lints were done about 4 minutes before the install (measured: lints 9.5 min, install
# 12.4 min niced beside them), and the compile would come next anyway.
log "Compiling the tests"
cargo test --workspace --locked --no-run

log "Kafka broker (tansu on 127.0.0.1:9092; its install started with this run)"
if ! wait "$kafka_install_pid"; then
  echo "installing the Kafka broker (tansu) failed; scripts/services/kafka.sh install said:" >&2
  cat .local/kafka/install.out >&2
  exit 1
fi
kafka_exports=$(bash scripts/services/kafka.sh up)
eval "$kafka_exports"
: "${KAFKA_URL:?the Kafka script did not say where the broker is}"

log "Tests (DATABASE_URL, MYSQL_URL, REDIS_URL, NATS_URL, REDIS_CLUSTER_URLS, DYNAMODB_ENDPOINT, DYNALITE_ENDPOINT, KAFKA_URL set; $CHECKPOINT_HISTORIES histories per backend)"
# The checkpoint command's tests (checkpoint-store-cli, tests/cli) run the built binary against
# the same servers, through the same variables (DYNAMODB_ENDPOINT reaches it as
# AWS_ENDPOINT_URL_DYNAMODB); SQLite in a temporary directory.
cargo test --workspace --locked
# The lease handover example as a test (examples/tests/processes.rs): worker processes killed,
# frozen, stopped gracefully and joined, on PostgreSQL, MySQL and Redis, whose features the
# workspace run leaves off, and on Redis again with every checkpoint write slowed to 700 ms. Its
# SQLite cases (plain and slow) ran in the workspace run just above: skipped here, so that the
# same scenario does not run twice (measured on 2 cores: about 30 s for the PostgreSQL and Redis
# cases, two at a time, before the MySQL one (about 13 s) was added; about 17 s for the two
# SQLite cases in the workspace run).
# The operator fleet (`operators`: `check`, the live view in tmux, `serve` in Chromium) also ran
# in the workspace run, on SQLite: skipped here too.
cargo test --locked -p checkpoint-examples --features all --test processes -- --skip on_sqlite --skip operators
# Except the Kafka exactly-once case on SQLite, which the workspace run cannot run (it has no
# `source-kafka`) and the skip above matches: subscription processes SIGKILLed while they
# project a topic into SQLite (about 13 s).
cargo test --locked -p checkpoint-examples --features all --test processes -- kafka_exactly_once_on_sqlite
# The PostgreSQL TLS test needs sqlx's rustls feature, which the workspace run leaves off
# (turned on there, it would put every PostgreSQL test of the suite on TLS).
# The command's status over a NATS stream and a Kafka topic: sources the workspace run leaves
# off (`source-nats`, `source-kafka`).
cargo test --locked -p checkpoint-store-cli --features source-nats,source-kafka --test cli -- nats kafka
cargo test --locked -p checkpoint-postgres --features tls-rustls --test integration -- security
# The same for MySQL (checkpoint-mysql's `tls-rustls`): the machine's MariaDB has TLS off, so
# the TLS test starts a MariaDB of its own with a certificate of a CA it makes.
cargo test --locked -p checkpoint-mysql --features tls-rustls --test integration -- security

log "Docs and packages (rustdoc warnings fail; every library crate and the command package and build from their package)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
# No upload: `cargo package` builds each crate from the files it would publish, so a file left
# out of a package (an included SQL or Lua file, a README) fails here. The checkpoint command
# (checkpoint-store-cli, a binary) too: it is meant to be installable from its package.
published=(
  checkpoint-core checkpoint-conformance checkpoint-committer checkpoint-worker
  checkpoint-subscription
  checkpoint-sql checkpoint-postgres checkpoint-sqlite checkpoint-mysql checkpoint-redis
  checkpoint-dynamodb
  checkpoint-source-sqlite checkpoint-source-postgres checkpoint-source-nats
  checkpoint-source-kafka
  checkpoint-connect checkpoint checkpoint-store-cli
)
package_args=()
for package in "${published[@]}"; do package_args+=(-p "$package"); done
cargo package --locked --allow-dirty "${package_args[@]}"
# Each package carries both license texts, the root's: read out of each `.crate` just written
# and compared byte for byte (a license file that holds a path instead of a link to the root's
# file is packaged as that path, and is in the package's file list all the same).
bash scripts/package-licenses.sh "${published[@]}"

log "Installing the checkpoint command as a user would (cargo install --path, --version, --help)"
# Into a temporary root, from the lock file, in the workspace's target directory
# (CARGO_TARGET_DIR), which already holds the dev builds of the tests. `--debug`: what this
# checks (the package installs from its folder with the lock file, the binary is `checkpoint`
# and answers) does not depend on the profile, and the release profile a user gets compiled
# every dependency again: measured on this 2-core machine, 5 min 38 s for a cold release
# install against 1 min 20 s for a cold --debug one (seconds when the dev builds are there).
install_root=$(mktemp -d)
CARGO_TARGET_DIR="$ROOT/target" cargo install --debug --locked --quiet \
  --path checkpoint-store-cli --root "$install_root"
"$install_root/bin/checkpoint" --version
help=$("$install_root/bin/checkpoint" --help)
grep -q '^Usage: checkpoint' <<<"$help"
rm -rf "$install_root"

log "Examples"
bash scripts/examples.sh

log "Benchmark smoke run (round trips checked, timings printed, never asserted)"
cargo run --locked -p checkpoint-bench --features crash -- --smoke
# The Kafka source's subscription rows (a backend of their own, not among the defaults: the
# page's scope is the stores'), on the broker the tests ran on.
cargo run --locked -p checkpoint-bench --features crash -- --smoke --backends kafka --workloads subscriptions
