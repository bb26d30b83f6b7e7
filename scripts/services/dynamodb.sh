#!/usr/bin/env bash
# A local DynamoDB-compatible server for the checkpoint-dynamodb tests.
#
#   scripts/services/dynamodb.sh up    install (once) and start (if not running) moto's server,
#                                      wait until it answers, print `export DYNAMODB_ENDPOINT=...`
#   scripts/services/dynamodb.sh down  stop the server this script started
#   scripts/services/dynamodb.sh serve PORT
#                                      run one more server on PORT in the foreground, from the
#                                      virtualenv `up` installed (the fault tests start, pause,
#                                      restart and kill servers of their own this way; the
#                                      script `exec`s, so the caller's child pid is the server's)
#
# The server is moto (a Python AWS emulator), installed into a project-local virtualenv under
# <repo>/.local/dynamodb/ so that a fresh machine needs nothing but python3 with its venv module,
# started with one lock around every request (see `write_launcher`).
# It listens on loopback only. Only the `export` line goes to stdout; everything else goes to
# stderr or to the log file, so callers can `eval "$(scripts/services/dynamodb.sh up)"`.
#
# Environment:
#   DYNAMODB_PORT   port to listen on (default 8765)
#   PYTHON          interpreter used to create the virtualenv (default python3)
set -euo pipefail

MOTO_VERSION="5.2.5"
HOST="127.0.0.1"
PORT="${DYNAMODB_PORT:-8765}"
PYTHON="${PYTHON:-python3}"

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
STATE_DIR="${REPO_ROOT}/.local/dynamodb"
VENV="${STATE_DIR}/venv"
PID_FILE="${STATE_DIR}/moto.pid"
LOG_FILE="${STATE_DIR}/moto.log"
LAUNCHER="${STATE_DIR}/serialized_moto_server.py"
ENDPOINT="http://${HOST}:${PORT}"
SERVICE="dynamodb"
# shellcheck source=lib.sh
source "${REPO_ROOT}/scripts/services/lib.sh"

# moto's own `moto_server` serves requests on many threads, and its DynamoDB backend evaluates a
# condition and applies the update in separate steps without a lock: concurrent conditional
# writes to one item can then both succeed (two compare-and-sets from the same position both
# win), which real DynamoDB never allows. This launcher is `moto_server` with one lock around
# every request, so each request is one atomic step, as DynamoDB guarantees per item. Sockets
# are still accepted and read concurrently; only the backend work is serialised.
write_launcher() {
    mkdir -p "${STATE_DIR}"
    cat >"${1:-${LAUNCHER}}" <<'PYTHON'
import sys
import threading

from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

host, port = sys.argv[1], int(sys.argv[2])
moto_app = DomainDispatcherApplication(create_backend_app)
lock = threading.Lock()


def serialized_app(environ, start_response):
    with lock:
        # Materialise the body inside the lock: the backend may do its work lazily.
        return list(moto_app(environ, start_response))


run_simple(host, port, serialized_app, threaded=True, request_handler=MotoRequestHandler)
PYTHON
}

installed() {
    [[ -x "${VENV}/bin/moto_server" ]] \
        && "${VENV}/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('moto') != '${MOTO_VERSION}')" 2>/dev/null
}

install() {
    mkdir -p "${STATE_DIR}"
    if [[ ! -x "${VENV}/bin/python" ]]; then
        log "creating virtualenv in ${VENV}"
        "${PYTHON}" -m venv "${VENV}" >&2
    fi
    log "installing moto[server]==${MOTO_VERSION} (about a minute the first time)"
    "${VENV}/bin/pip" install --quiet --disable-pip-version-check "moto[server]==${MOTO_VERSION}" >&2
}

# True when the server on the port is the one this script started: the pid in the pid file is
# alive and runs this script's launcher on this port. Only that server is known to hold the
# request lock the tests rely on; a plain `moto_server` (or anything else) on the port is not.
ours() {
    local cmdline
    cmdline="$(started_cmdline)" || return 1
    [[ "${cmdline}" == *"${LAUNCHER}"*" ${PORT}"* ]]
}

refuse_foreign() {
    log "${ENDPOINT} is taken by a server this script did not start (no pid file of ours, or its"
    log "process is not this script's launcher on port ${PORT}), so it may lack the request lock"
    log "the tests rely on. Stop it, or set DYNAMODB_PORT to a free port."
    return 1
}

up() {
    if answering; then
        ours || refuse_foreign || return 1
        log "the server this script started already answers on ${ENDPOINT}"
        echo "export DYNAMODB_ENDPOINT=${ENDPOINT}"
        return 0
    fi
    # A server that serves one request at a time may be busy with a long one: give it time
    # rather than start a second server on a port that is taken.
    if listening; then
        ours || refuse_foreign || return 1
        log "the server this script started listens on ${ENDPOINT} but does not answer yet; waiting up to 60 s"
        for _ in $(seq 1 30); do
            if answering; then
                echo "export DYNAMODB_ENDPOINT=${ENDPOINT}"
                return 0
            fi
            sleep 2
        done
        log "${ENDPOINT} does not answer HTTP; set DYNAMODB_PORT to another port"
        return 1
    fi
    installed || install
    mkdir -p "${STATE_DIR}"
    write_launcher
    start_and_wait moto DYNAMODB_ENDPOINT "${VENV}/bin/python" "${LAUNCHER}" "${HOST}" "${PORT}"
}

# True when the process is alive (whatever it runs).
alive() {
    kill -0 "$1" 2>/dev/null
}

down() {
    stop_started moto alive
}

# A server of the caller's own, in the foreground: no pid file, no log file, nothing shared
# with the server `up` starts. It needs the virtualenv `up` installs (never installs here: the
# tests that call it must not wait a minute for pip, nor race each other installing).
serve() {
    local port="${1:-}"
    if [[ ! "${port}" =~ ^[0-9]+$ ]]; then
        echo "usage: $0 serve PORT" >&2
        exit 2
    fi
    if ! installed; then
        log "moto is not installed in ${VENV}: run \`bash scripts/services/dynamodb.sh up\` first"
        exit 3
    fi
    write_launcher_once
    exec "${VENV}/bin/python" "${LAUNCHER}" "${HOST}" "${port}"
}

# Writes the launcher unless it is there with the same text already, so concurrent `serve`s never
# see a half-written file: a new text goes to a temporary file that is renamed into place.
write_launcher_once() {
    local expected
    expected="$(mktemp "${STATE_DIR}/launcher.XXXXXX")"
    write_launcher "${expected}"
    if cmp -s "${expected}" "${LAUNCHER}"; then
        rm -f "${expected}"
    else
        mv -f "${expected}" "${LAUNCHER}"
    fi
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    serve) serve "${2:-}" ;;
    *)
        echo "usage: $0 up|down|serve PORT" >&2
        exit 2
        ;;
esac
