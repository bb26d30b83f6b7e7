#!/usr/bin/env bash
# A second, independent DynamoDB-compatible server for the checkpoint-dynamodb tests: dynalite.
#
#   scripts/services/dynalite.sh up    install (once) and start (if not running) dynalite,
#                                      wait until it answers, print `export DYNALITE_ENDPOINT=...`
#   scripts/services/dynalite.sh down  stop the server this script started
#
# dynalite (a Node.js DynamoDB emulator on LevelDB) is installed with npm into
# <repo>/.local/dynalite/, so a fresh machine needs nothing but node (20 or later) and npm. It
# runs every request as it comes, with a lock per item around each write (the condition is
# evaluated and the update applied under the item's lock): real per-item concurrency, with no
# lock around the whole server, which is what moto (scripts/services/dynamodb.sh) needs. It has
# no transactions (`TransactWriteItems`), no PartiQL, and does not return the old item of a failed
# condition (`ReturnValuesOnConditionCheckFailure`); the tests that need those run on moto.
#
# The server keeps its tables in memory (no `--path`), creates, deletes and updates tables at
# once (`--createTableMs 0` and friends; the default keeps a new table `CREATING` for half a
# second) and listens on loopback only. Only the `export` line goes to stdout; everything else
# goes to stderr or to the log file, so callers can `eval "$(scripts/services/dynalite.sh up)"`.
#
# Environment:
#   DYNALITE_PORT   port to listen on (default 8766)
#   NODE, NPM       the node and npm commands (default: node and npm from PATH)
set -euo pipefail

DYNALITE_VERSION="4.0.0"
HOST="127.0.0.1"
PORT="${DYNALITE_PORT:-8766}"
NODE="${NODE:-node}"
NPM="${NPM:-npm}"

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE_DIR="${REPO_ROOT}/.local/dynalite"
CLI="${STATE_DIR}/node_modules/dynalite/cli.js"
PID_FILE="${STATE_DIR}/dynalite-${PORT}.pid"
LOG_FILE="${STATE_DIR}/dynalite-${PORT}.log"
ENDPOINT="http://${HOST}:${PORT}"
SERVICE="dynalite"
# shellcheck source=lib.sh
source "${REPO_ROOT}/scripts/services/lib.sh"

# The server's whole argument list: in memory, tables ready at once, loopback only. `ours`
# compares a running server's command line with exactly this.
SERVER_ARGS=(--host "${HOST}" --port "${PORT}" --createTableMs 0 --deleteTableMs 0 --updateTableMs 0)

installed() {
    [[ -f "${CLI}" ]] \
        && [[ "$("${NODE}" -p "require('${STATE_DIR}/node_modules/dynalite/package.json').version" 2>/dev/null)" == "${DYNALITE_VERSION}" ]]
}

install() {
    if ! command -v "${NODE}" >/dev/null || ! command -v "${NPM}" >/dev/null; then
        log "dynalite needs node (20 or later) and npm on PATH (or NODE and NPM set)"
        return 1
    fi
    mkdir -p "${STATE_DIR}"
    log "installing dynalite@${DYNALITE_VERSION} with npm into ${STATE_DIR} (a few seconds the first time)"
    "${NPM}" install --prefix "${STATE_DIR}" --no-audit --no-fund --loglevel=error --save-exact \
        "dynalite@${DYNALITE_VERSION}" >&2
}

# True when the server on the port is the one this script started: the pid in the pid file is
# alive and runs this script's dynalite with exactly the arguments above. Only that server is
# known to keep tables in memory and to create them at once; anything else on the port is not.
ours() {
    local cmdline expected
    cmdline="$(started_cmdline)" || return 1
    expected="${CLI} ${SERVER_ARGS[*]} "
    [[ "${cmdline}" == *" ${expected}" ]]
}

refuse_foreign() {
    log "${ENDPOINT} is taken by a server this script did not start (no pid file of ours, or its"
    log "process is not this script's dynalite with the arguments: ${SERVER_ARGS[*]}), so it may"
    log "keep tables on disk, create them slowly or not be dynalite at all. Stop it, or set"
    log "DYNALITE_PORT to a free port."
    return 1
}

up() {
    if answering || listening; then
        ours || refuse_foreign || return 1
        for _ in $(seq 1 30); do
            if answering; then
                log "the server this script started already answers on ${ENDPOINT}"
                echo "export DYNALITE_ENDPOINT=${ENDPOINT}"
                return 0
            fi
            sleep 1
        done
        log "the server this script started listens on ${ENDPOINT} but does not answer HTTP; stop it with \`$0 down\`"
        return 1
    fi
    installed || install
    mkdir -p "${STATE_DIR}"
    start_and_wait dynalite DYNALITE_ENDPOINT "${NODE}" "${CLI}" "${SERVER_ARGS[@]}"
}

down() {
    stop_started dynalite ours
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    *)
        echo "usage: $0 up|down" >&2
        exit 2
        ;;
esac
