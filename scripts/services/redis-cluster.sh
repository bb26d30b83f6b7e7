#!/usr/bin/env bash
# Starts (up) or stops (down) a local Redis Cluster of 3 masters on 127.0.0.1:7101-7103 from
# the installed redis-server, for the checkpoint-redis cluster tests.
#
#   eval "$(bash scripts/services/redis-cluster.sh up)"   # prints: export REDIS_CLUSTER_URLS=...
#   bash scripts/services/redis-cluster.sh down           # stops the nodes, removes the state
#
# `up` is idempotent: a cluster it started that is already up with cluster_state:ok is left
# alone. A Redis on one of its ports that it did not start is never reused nor stopped: `up`
# fails and says so.
# State (configs, node files, logs) lives under <repo>/.local/redis-cluster/.
# Ports can be moved with REDIS_CLUSTER_BASE_PORT (default 7101).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE="$ROOT/.local/redis-cluster"
BASE_PORT="${REDIS_CLUSTER_BASE_PORT:-7101}"
PORTS=("$BASE_PORT" "$((BASE_PORT + 1))" "$((BASE_PORT + 2))")
HOST=127.0.0.1

log() { echo "redis-cluster: $*" >&2; }

urls() {
  local out="" port
  for port in "${PORTS[@]}"; do
    out+="${out:+,}redis://$HOST:$port"
  done
  echo "$out"
}

require() {
  if ! command -v "$1" >/dev/null 2>&1; then
    log "$1 not found; install the Debian packages redis-server and redis-tools"
    exit 1
  fi
}

answers() { redis-cli -h "$HOST" -p "$1" ping >/dev/null 2>&1; }

cluster_ok() {
  local port
  for port in "${PORTS[@]}"; do
    redis-cli -h "$HOST" -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
  done
}

# Every node knows all three masters and every slot is covered.
cluster_complete() {
  cluster_ok || return 1
  local port
  for port in "${PORTS[@]}"; do
    redis-cli -h "$HOST" -p "$port" cluster info 2>/dev/null | grep -q '^cluster_known_nodes:3' || return 1
    redis-cli -h "$HOST" -p "$port" cluster info 2>/dev/null | grep -q '^cluster_slots_ok:16384' || return 1
  done
}

# True when the node on the port is one this script started: its working directory is this
# script's state folder for that port. A server started otherwise may have other settings
# (persistence, timeouts, a password) than the tests rely on.
ours() {
  local dir
  dir=$(redis-cli -h "$HOST" -p "$1" config get dir 2>/dev/null | sed -n 2p)
  [[ "$dir" == "$STATE/$1" ]]
}

refuse_foreign() {
  log "127.0.0.1:$1 is taken by a Redis this script did not start (its dir is not $STATE/$1);"
  log "it may have other settings than the tests rely on. Stop it, or set REDIS_CLUSTER_BASE_PORT."
  exit 1
}

up() {
  require redis-server
  require redis-cli
  local port
  for port in "${PORTS[@]}"; do
    if answers "$port" && ! ours "$port"; then
      refuse_foreign "$port"
    fi
  done
  if cluster_complete; then
    log "already up"
    echo "export REDIS_CLUSTER_URLS=$(urls)"
    return
  fi
  # A half-started or broken cluster from an earlier run: start over from a clean state.
  for port in "${PORTS[@]}"; do
    if answers "$port"; then
      log "node $port answers but the cluster is not complete: restarting it"
      down_nodes
      break
    fi
  done
  rm -rf "$STATE"
  mkdir -p "$STATE"
  for port in "${PORTS[@]}"; do
    mkdir -p "$STATE/$port"
    cat >"$STATE/$port/redis.conf" <<CONF
bind $HOST
port $port
protected-mode yes
daemonize yes
dir $STATE/$port
pidfile $STATE/$port/redis.pid
logfile $STATE/$port/redis.log
cluster-enabled yes
cluster-config-file nodes.conf
cluster-node-timeout 5000
appendonly no
save ""
CONF
    redis-server "$STATE/$port/redis.conf"
  done
  for port in "${PORTS[@]}"; do
    wait_for "node $port to answer" answers "$port"
  done
  local nodes=()
  for port in "${PORTS[@]}"; do nodes+=("$HOST:$port"); done
  redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$STATE/create.log" 2>&1 || {
    log "cluster create failed, see $STATE/create.log"
    cat "$STATE/create.log" >&2
    exit 1
  }
  wait_for "cluster_state:ok on every node" cluster_complete
  log "up on ports ${PORTS[*]}"
  echo "export REDIS_CLUSTER_URLS=$(urls)"
}

wait_for() {
  local what="$1"
  shift
  local i
  for i in $(seq 1 150); do
    if "$@"; then return 0; fi
    sleep 0.2
  done
  log "timed out waiting for $what"
  exit 1
}

down_nodes() {
  local port
  for port in "${PORTS[@]}"; do
    if answers "$port" && ours "$port"; then
      redis-cli -h "$HOST" -p "$port" shutdown nosave >/dev/null 2>&1 || true
    fi
  done
  for port in "${PORTS[@]}"; do
    local i
    for i in $(seq 1 50); do
      answers "$port" || break
      sleep 0.1
    done
  done
}

down() {
  require redis-cli
  down_nodes
  rm -rf "$STATE"
  log "down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *)
    echo "usage: $0 up|down" >&2
    exit 2
    ;;
esac
