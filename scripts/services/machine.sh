#!/usr/bin/env bash
# Makes sure the servers this kind of machine runs for every session (PostgreSQL on
# 127.0.0.1:5432, MariaDB on 127.0.0.1:3306, Redis on 127.0.0.1:6379, NATS with JetStream on
# 127.0.0.1:4222) are up, starting them with the same commands the machine uses when they are
# down. Prints nothing on stdout.
set -euo pipefail

log() { echo "machine services: $*" >&2; }

wait_for() {
  local what=$1; shift
  for _ in $(seq 1 60); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  log "$what did not come up"
  return 1
}

up() {
  if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    log "PostgreSQL is down; starting it"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start
    wait_for PostgreSQL pg_isready -h 127.0.0.1 -p 5432 -q
  fi
  if ! mysqladmin -uroot -h127.0.0.1 -P3306 ping >/dev/null 2>&1; then
    log "MariaDB is down; starting it"
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    wait_for MariaDB mysqladmin -uroot -h127.0.0.1 -P3306 ping
  fi
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    log "Redis is down; starting it"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
    wait_for Redis redis-cli -h 127.0.0.1 -p 6379 ping
  fi
  if ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
    log "NATS is down; starting it"
    mkdir -p /var/lib/nats-server
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
      -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
    wait_for NATS bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222'
  fi
}

case "${1:-up}" in
  up) up ;;
  down) log "the machine's own servers are left running" ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
