#!/usr/bin/env bash
# A local Kafka-protocol broker for the Kafka source's tests: tansu 0.6.0 (crates.io,
# Apache-2.0), a Kafka-compatible broker written in Rust. Apache Kafka's own distribution comes
# from no registry this kind of machine reaches; what tansu serves and what it does not is in
# docs/kafka-broker.md.
#
#   scripts/services/kafka.sh install  build and install tansu into <repo>/.local/kafka/ unless
#                                      it is there (a few minutes the first time; its log in
#                                      .local/kafka/install.log); a second `install` or `up`
#                                      started meanwhile waits for the first one
#   scripts/services/kafka.sh up       install (when missing) and start (if not running) one
#                                      broker on 127.0.0.1:9092 with an empty storage, wait until
#                                      it answers a Metadata request, print
#                                      `export KAFKA_URL=kafka://127.0.0.1:9092`
#   scripts/services/kafka.sh down     stop the broker this script started, remove its storage
#   scripts/services/kafka.sh serve PORT [STORAGE]
#                                      run one more broker on 127.0.0.1:PORT in the foreground
#                                      (the script `exec`s, so the caller's child pid is the
#                                      broker's: a test can SIGKILL and restart it). STORAGE:
#                                        /some/path/x.db    a SQLite file (created when missing,
#                                                           its folder too): survives a restart
#                                        memory             in memory: a restart empties it
#                                        any tansu storage URL, passed as it is
#                                      default: <repo>/.local/kafka/data/serve-PORT.db, a file
#                                      per port that survives restarts of that port (and is
#                                      never removed by this script: use a path of your own for
#                                      an empty start)
#
# Storage: tansu is built with its `libsql` (SQLite) and `dynostore` (memory) engines. The
# broker `up` starts keeps its topics in a SQLite file (.local/kafka/data/up-PORT.db, new at each
# start): tansu's memory engine loses records (a Fetch from an offset inside a stored batch
# starts at the next batch) and answers ListOffsets(latest) with the last batch's base offset
# + 1; its SQLite engine serves both right (docs/kafka-broker.md, with what each engine gets
# wrong). KAFKA_STORAGE=memory starts `up`'s broker in memory instead. On the shared broker,
# mind two faults of the SQLite engine: DeleteTopics deletes every topic, and a Fetch of a topic
# or partition that does not exist stops its storage for good (the process keeps listening and
# closes every connection; `up` run again restarts such a broker, with a new, empty file).
# Its `postgres` engine is left out: tansu creates no PostgreSQL schema of its own (it expects
# the tables of a SQL file that its repository ships and its crates do not).
#
# The build: `cargo install tansu@0.6.0 --locked` at opt-level 0 without debug info, niced. A
# release build took 48 minutes on 2 cores; this one takes minutes (docs/kafka-broker.md), and
# the broker is only a test fixture. Its target directory stays in .local/kafka/target.
#
# Only the `export` line goes to stdout; everything else goes to stderr or to the log files
# under <repo>/.local/kafka/, so callers can `eval "$(scripts/services/kafka.sh up)"`.
# A broker on the port that this script did not start is never reused nor stopped: `up` fails
# and says so.
#
# Environment:
#   KAFKA_PORT     port `up` listens on (default 9092)
#   KAFKA_STORAGE  `sqlite` (default) or `memory`: the storage of the broker `up` starts
set -euo pipefail

TANSU_VERSION="0.6.0"
TANSU_FEATURES="dynostore,libsql"
HOST="127.0.0.1"
PORT="${KAFKA_PORT:-9092}"

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE_DIR="${REPO_ROOT}/.local/kafka"
TANSU="${STATE_DIR}/bin/tansu"
INSTALL_LOG="${STATE_DIR}/install.log"
INSTALL_LOCK="${STATE_DIR}/install.lock"
DATA_DIR="${STATE_DIR}/data"
UP_DB="up-${PORT}.db"
PID_FILE="${STATE_DIR}/broker-${PORT}.pid"
LOG_FILE="${STATE_DIR}/broker-${PORT}.log"
URL="kafka://${HOST}:${PORT}"

log() { echo "kafka.sh: $*" >&2; }

# True when the installed tansu is this version with both storage engines. Its help ends with a
# line naming the storage engines it was built with.
installed() {
    [[ -x "${TANSU}" ]] || return 1
    local version help
    version="$("${TANSU}" --version 2>/dev/null)" || return 1
    [[ "${version}" == *" ${TANSU_VERSION}" ]] || return 1
    help="$("${TANSU}" --help 2>/dev/null)" || return 1
    [[ "${help}" == *"Storage engines: dynostore, libsql"* ]]
}

# Builds and installs tansu unless it is installed. Holds a lock for the whole build, so a
# concurrent `install` or `up` (scripts/test.sh starts the install in the background at its
# start and `up` later) waits for this one and then finds tansu installed.
install() {
    mkdir -p "${STATE_DIR}"
    exec 9>"${INSTALL_LOCK}"
    if ! flock --nonblock 9; then
        log "another install of tansu is running (lock ${INSTALL_LOCK}); waiting for it"
        flock 9
    fi
    if installed; then
        flock --unlock 9
        return 0
    fi
    if ! command -v cargo >/dev/null; then
        log "cargo is not on PATH: tansu is built from crates.io with cargo"
        return 1
    fi
    log "building tansu ${TANSU_VERSION} (features ${TANSU_FEATURES}) into ${STATE_DIR} (log: ${INSTALL_LOG})"
    local started=${SECONDS}
    if ! nice -n 10 env \
        CARGO_TARGET_DIR="${STATE_DIR}/target" \
        CARGO_PROFILE_RELEASE_OPT_LEVEL=0 \
        CARGO_PROFILE_RELEASE_DEBUG=0 \
        CARGO_PROFILE_RELEASE_INCREMENTAL=false \
        cargo install "tansu@${TANSU_VERSION}" --locked --force \
        --features "${TANSU_FEATURES}" --root "${STATE_DIR}" >"${INSTALL_LOG}" 2>&1; then
        log "installing tansu failed; last lines of ${INSTALL_LOG}:"
        tail -n 30 "${INSTALL_LOG}" >&2 || true
        flock --unlock 9
        return 1
    fi
    if ! installed; then
        log "tansu was built but ${TANSU} does not answer as tansu ${TANSU_VERSION} with the dynostore and libsql engines"
        flock --unlock 9
        return 1
    fi
    log "installed tansu ${TANSU_VERSION} in $((SECONDS - started)) s"
    flock --unlock 9
}

# True when something accepts TCP connections on the port, whether or not it answers yet.
listening() {
    (exec 3<>"/dev/tcp/${HOST}/$1") 2>/dev/null
}

# True when a broker on the port answers a Metadata request (tansu's own client lists the
# topics). Bounded: against a port where nothing answers, `tansu topic list` retries for 20 s.
answering() {
    listening "$1" && timeout 10 "${TANSU}" topic list --broker "tcp://${HOST}:$1" >/dev/null 2>&1
}

# Prints the command line (arguments separated by spaces) of the process in the pid file; false
# when there is no pid file or that process is gone.
started_cmdline() {
    [[ -f "${PID_FILE}" ]] || return 1
    local pid
    pid="$(cat "${PID_FILE}")"
    [[ -r "/proc/${pid}/cmdline" ]] || return 1
    tr '\0' ' ' <"/proc/${pid}/cmdline"
}

# True when the broker on the port is the one this script started: the pid in the pid file is
# alive and runs this checkout's tansu listening on this port.
ours() {
    local cmdline
    cmdline="$(started_cmdline)" || return 1
    [[ "${cmdline}" == "${TANSU} broker "*"--listener-url tcp://${HOST}:${PORT} "* ]]
}

refuse_foreign() {
    log "${HOST}:${PORT} is taken by a server this script did not start (no pid file of ours, or"
    log "its process is not this checkout's tansu on port ${PORT}). Stop it, or set KAFKA_PORT."
    return 1
}

# Sets BROKER_ARGS to the broker's whole argument list for a port and a storage URL: it listens
# on loopback and advertises the same address (tansu's default advertises localhost:9092).
broker_args() {
    local port="$1" storage="$2"
    BROKER_ARGS=(broker --listener-url "tcp://${HOST}:${port}"
        --advertised-listener-url "tcp://${HOST}:${port}" --storage-engine "${storage}")
}

up() {
    if listening "${PORT}"; then
        ours || refuse_foreign || return 1
        if answering "${PORT}"; then
            log "the broker this script started already answers on ${HOST}:${PORT}"
            echo "export KAFKA_URL=${URL}"
            return 0
        fi
        log "the broker this script started listens on ${HOST}:${PORT} but does not answer: restarting it"
        down
    fi
    installed || install
    local storage
    case "${KAFKA_STORAGE:-sqlite}" in
        sqlite) storage="sqlite://${UP_DB}" ;;
        memory) storage="memory://tansu/" ;;
        *)
            log "KAFKA_STORAGE is \`sqlite\` or \`memory\`, not \`${KAFKA_STORAGE}\`"
            return 1
            ;;
    esac
    # An empty start: the file of an earlier broker on this port goes.
    mkdir -p "${DATA_DIR}"
    rm -f "${DATA_DIR}/${UP_DB}" "${DATA_DIR}/${UP_DB}-wal" "${DATA_DIR}/${UP_DB}-shm"
    broker_args "${PORT}" "${storage}"
    log "starting tansu on ${HOST}:${PORT}, storage ${storage} in ${DATA_DIR} (log: ${LOG_FILE})"
    # setsid: the broker outlives this script and the shell that evals its output. tansu opens
    # a `sqlite://` path relative to its working directory.
    (cd "${DATA_DIR}" && exec setsid "${TANSU}" "${BROKER_ARGS[@]}" >"${LOG_FILE}" 2>&1 </dev/null) &
    echo $! >"${PID_FILE}"
    local _
    for _ in $(seq 1 100); do
        if answering "${PORT}"; then
            echo "export KAFKA_URL=${URL}"
            return 0
        fi
        if ! kill -0 "$(cat "${PID_FILE}")" 2>/dev/null; then
            log "tansu exited; last lines of ${LOG_FILE}:"
            tail -n 20 "${LOG_FILE}" >&2 || true
            rm -f "${PID_FILE}"
            return 1
        fi
        sleep 0.1
    done
    log "tansu did not answer on ${HOST}:${PORT} within 10 s; see ${LOG_FILE}"
    return 1
}

down() {
    if [[ ! -f "${PID_FILE}" ]]; then
        log "no pid file at ${PID_FILE}: nothing started by this script is running"
        return 0
    fi
    local pid _
    pid="$(cat "${PID_FILE}")"
    if ours; then
        kill "${pid}"
        for _ in $(seq 1 40); do
            kill -0 "${pid}" 2>/dev/null || break
            sleep 0.25
        done
        if kill -0 "${pid}" 2>/dev/null; then
            log "tansu (pid ${pid}) did not stop within 10 s of SIGTERM: killing it"
            kill -KILL "${pid}" 2>/dev/null || true
        fi
        log "stopped tansu (pid ${pid})"
    else
        # The pid is gone, or was reused by another process: never signal that one.
        log "tansu (pid ${pid}) was not running"
    fi
    rm -f "${PID_FILE}" "${DATA_DIR}/${UP_DB}" "${DATA_DIR}/${UP_DB}-wal" "${DATA_DIR}/${UP_DB}-shm"
}

# A broker of the caller's own, in the foreground: no pid file, no log file, nothing shared with
# the broker `up` starts. It needs the tansu `install` or `up` installed (never installs here:
# the tests that call it must not wait minutes for a build, nor race each other building).
serve() {
    local port="${1:-}" storage="${2:-}"
    if [[ ! "${port}" =~ ^[0-9]+$ ]]; then
        echo "usage: $0 serve PORT [memory|/path/to/file.db|STORAGE-URL]" >&2
        exit 2
    fi
    if ! installed; then
        log "tansu ${TANSU_VERSION} is not installed in ${STATE_DIR}: run \`bash scripts/services/kafka.sh install\` first"
        exit 3
    fi
    # tansu opens a `sqlite://` path relative to its working directory (a leading slash is
    # dropped), so a file is served from its own folder.
    local dir="${DATA_DIR}"
    case "${storage}" in
        "")
            storage="sqlite://serve-${port}.db"
            ;;
        memory)
            storage="memory://tansu/"
            ;;
        *://*) ;;
        *)
            dir="$(dirname "${storage}")"
            storage="sqlite://$(basename "${storage}")"
            ;;
    esac
    mkdir -p "${dir}"
    cd "${dir}"
    broker_args "${port}" "${storage}"
    exec "${TANSU}" "${BROKER_ARGS[@]}"
}

case "${1:-}" in
    install) install ;;
    up) up ;;
    down) down ;;
    serve)
        if (($# > 3)); then
            echo "usage: $0 serve PORT [memory|/path/to/file.db|STORAGE-URL]" >&2
            exit 2
        fi
        serve "${2:-}" "${3:-}"
        ;;
    *)
        echo "usage: $0 install|up|down|serve PORT [STORAGE]" >&2
        exit 2
        ;;
esac
