#!/usr/bin/env bash
# Starts (up) or stops (down) a local NATS JetStream cluster of three servers on loopback from
# the installed nats-server, for checkpoint-source-nats's cluster test (a replicated stream,
# one server SIGKILLed and restarted under a subscription fleet).
#
#   eval "$(bash scripts/services/nats-cluster.sh up)"  # prints: export NATS_CLUSTER_URLS=...
#   bash scripts/services/nats-cluster.sh down          # stops the servers, removes the state
#   bash scripts/services/nats-cluster.sh pid N         # the pid of server N (1-3), if running
#   bash scripts/services/nats-cluster.sh start N       # starts server N again (after a kill)
#
# Server N (1-3) is named n<N>, takes clients on 127.0.0.1:4230+N, routes on 127.0.0.1:6230+N
# and serves monitoring (/jsz, read here to see a meta leader) on 127.0.0.1:8230+N: away from
# the machine's NATS on 4222. Ports move with NATS_CLUSTER_BASE_PORT at `up` (default 4231; the
# route and monitoring ports keep their offsets of +2000 and +4000).
#
# `up` is idempotent: servers it started that still run are left alone, one that is down (a
# test killed it and failed) is started again on its store, and it returns once every server
# answers and the cluster has a JetStream meta leader. A NATS on one of its ports that it did
# not start is never reused nor stopped: `up` fails and says so. Only `up` prints on stdout.
# State (configs, JetStream stores, logs, pid files) lives under <repo>/.local/nats-cluster/.
#
# The servers run a copy of nats-server, bin/nats-cluster in the state folder: the machine's
# tools find the machine's NATS by its executable (`start-stop-daemon --exec
# /usr/sbin/nats-server` starts nothing while any process of that file runs, `pgrep -x
# nats-server` in checkpoint-source-nats's restart test), and must never take a server of the
# cluster for it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE="$ROOT/.local/nats-cluster"
# `up` records the base port in the state folder, so that `pid`, `start` and `down` find the
# servers it started whatever NATS_CLUSTER_BASE_PORT says when they run.
BASE_PORT="${NATS_CLUSTER_BASE_PORT:-$(cat "$STATE/base-port" 2>/dev/null || echo 4231)}"
HOST=127.0.0.1
SERVERS=(1 2 3)

log() { echo "nats-cluster: $*" >&2; }

client_port() { echo $((BASE_PORT + $1 - 1)); }
route_port() { echo $((BASE_PORT + 2000 + $1 - 1)); }
monitor_port() { echo $((BASE_PORT + 4000 + $1 - 1)); }
dir() { echo "$STATE/n$1"; }
BIN="$STATE/bin/nats-cluster"

# The copy of the installed nats-server the servers run (see the header); a new one is moved
# into place, so that servers running the old one keep it.
install_binary() {
  local installed
  installed="$(command -v nats-server)"
  cmp -s "$installed" "$BIN" && return 0
  mkdir -p "$STATE/bin"
  cp "$installed" "$BIN.new"
  mv "$BIN.new" "$BIN"
}

urls() {
  local out="" n
  for n in "${SERVERS[@]}"; do
    out+="${out:+,}nats://$HOST:$(client_port "$n")"
  done
  echo "$out"
}

require() {
  if ! command -v "$1" >/dev/null 2>&1; then
    log "$1 not found; install the Debian packages nats-server and curl"
    exit 1
  fi
}

listening() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# The pid of server N when it runs and is the one this script started: the process in its pid
# file runs nats-server with this script's config for N (a reused pid never matches).
running_pid() {
  local file pid
  file="$(dir "$1")/nats.pid"
  [[ -f "$file" ]] || return 1
  pid="$(cat "$file")"
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-c $(dir "$1")/nats.conf" || return 1
  echo "$pid"
}

refuse_foreign() {
  log "$HOST:$1 is taken by a process this script did not start (no server of $STATE runs);"
  log "it may be another NATS with other settings. Stop it, or set NATS_CLUSTER_BASE_PORT."
  exit 1
}

write_config() {
  local n="$1" routes="" m
  for m in "${SERVERS[@]}"; do
    [[ "$m" == "$n" ]] || routes+="    nats-route://$HOST:$(route_port "$m")"$'\n'
  done
  mkdir -p "$(dir "$n")/store"
  cat >"$(dir "$n")/nats.conf" <<CONF
server_name: n$n
listen: $HOST:$(client_port "$n")
http: $HOST:$(monitor_port "$n")
pid_file: "$(dir "$n")/nats.pid"
jetstream {
  store_dir: "$(dir "$n")/store"
  max_memory_store: 64MB
  max_file_store: 1GB
}
cluster {
  name: checkpoint
  listen: $HOST:$(route_port "$n")
  routes: [
$routes  ]
}
CONF
}

# Starts server N in the background for good (setsid: it outlives this script and the shell
# that evals its output) unless it runs; waits until it takes clients.
start_one() {
  local n="$1" port
  port="$(client_port "$n")"
  if running_pid "$n" >/dev/null; then
    return 0
  fi
  if listening "$port" || listening "$(route_port "$n")"; then
    refuse_foreign "$port"
  fi
  [[ -f "$(dir "$n")/nats.conf" ]] || write_config "$n"
  install_binary
  setsid "$BIN" -c "$(dir "$n")/nats.conf" >>"$(dir "$n")/nats.log" 2>&1 </dev/null &
  wait_for "server n$n to take clients on $port" listening "$port"
}

# True when server N's JetStream knows a meta leader (the cluster's JetStream is usable).
has_meta_leader() {
  curl --silent --max-time 2 "http://$HOST:$(monitor_port "$1")/jsz" 2>/dev/null |
    grep -q '"leader": *"n[0-9]'
}

every_server_sees_a_leader() {
  local n
  for n in "${SERVERS[@]}"; do has_meta_leader "$n" || return 1; done
}

wait_for() {
  local what="$1"
  shift
  local i
  for i in $(seq 1 300); do
    if "$@"; then return 0; fi
    sleep 0.2
  done
  log "timed out waiting for $what; logs in $STATE/n*/nats.log"
  exit 1
}

# True when server N runs with the ports this run of the script computes (a cluster started
# with another NATS_CLUSTER_BASE_PORT has the same state folder).
on_these_ports() {
  grep -qx "listen: $HOST:$(client_port "$1")" "$(dir "$1")/nats.conf"
}

up() {
  require nats-server
  require curl
  local n
  for n in "${SERVERS[@]}"; do
    if running_pid "$n" >/dev/null; then
      if ! on_these_ports "$n"; then
        log "server n$n of $STATE runs on other ports (another NATS_CLUSTER_BASE_PORT): run down first"
        exit 1
      fi
    elif listening "$(client_port "$n")"; then
      refuse_foreign "$(client_port "$n")"
    fi
  done
  mkdir -p "$STATE"
  echo "$BASE_PORT" >"$STATE/base-port"
  for n in "${SERVERS[@]}"; do
    # A running server keeps its config; a stopped one is started on its store, config anew.
    running_pid "$n" >/dev/null || write_config "$n"
    start_one "$n"
  done
  wait_for "a JetStream meta leader seen by every server" every_server_sees_a_leader
  log "up on $(urls) (state in $STATE)"
  echo "export NATS_CLUSTER_URLS=$(urls)"
}

down() {
  local n pid
  for n in "${SERVERS[@]}"; do
    if pid="$(running_pid "$n")"; then
      kill "$pid"
      for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      log "stopped n$n (pid $pid)"
    fi
  done
  rm -rf "$STATE"
  log "down"
}

server_arg() {
  if [[ ! "${1:-}" =~ ^[1-3]$ ]]; then
    echo "usage: $0 pid|start N (N is 1, 2 or 3)" >&2
    exit 2
  fi
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  pid)
    server_arg "${2:-}"
    running_pid "$2" || {
      log "server n$2 is not running"
      exit 1
    }
    ;;
  start)
    server_arg "${2:-}"
    require nats-server
    [[ -f "$(dir "$2")/nats.conf" ]] || {
      log "no state for n$2 in $STATE: run \`$0 up\` first"
      exit 1
    }
    start_one "$2"
    ;;
  *)
    echo "usage: $0 up|down|pid N|start N" >&2
    exit 2
    ;;
esac
