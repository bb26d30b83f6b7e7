# What the service scripts share (dynamodb.sh, dynalite.sh): sourced, never run. The sourcing
# script sets SERVICE (the name its messages start with), HOST, PORT, ENDPOINT, PID_FILE and
# LOG_FILE first.

log() { echo "${SERVICE}.sh: $*" >&2; }

# True when something answers HTTP on the port. Both emulators answer a request that is not an
# AWS call with an error status, so any HTTP status means it is up.
answering() {
    local code
    code="$(curl --silent --output /dev/null --max-time 2 --write-out '%{http_code}' "${ENDPOINT}/" 2>/dev/null || true)"
    [[ -n "${code}" && "${code}" != "000" ]]
}

# True when something accepts TCP connections on the port, whether or not it answers yet.
listening() {
    (exec 3<>"/dev/tcp/${HOST}/${PORT}") 2>/dev/null
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

# start_and_wait NAME VARIABLE COMMAND...: starts COMMAND in the background for good, its pid in
# the pid file and its output in the log file, and waits up to 30 s for it to answer; prints
# `export VARIABLE=ENDPOINT` once it does.
start_and_wait() {
    local name="$1" variable="$2"
    shift 2
    log "starting ${name} on ${ENDPOINT} (log: ${LOG_FILE})"
    # setsid: the server outlives this script and the shell that evals its output.
    setsid "$@" >"${LOG_FILE}" 2>&1 </dev/null &
    echo $! >"${PID_FILE}"
    for _ in $(seq 1 60); do
        if answering; then
            echo "export ${variable}=${ENDPOINT}"
            return 0
        fi
        if ! kill -0 "$(cat "${PID_FILE}")" 2>/dev/null; then
            log "${name} exited; last lines of ${LOG_FILE}:"
            tail -n 20 "${LOG_FILE}" >&2 || true
            rm -f "${PID_FILE}"
            return 1
        fi
        sleep 0.5
    done
    log "${name} did not answer on ${ENDPOINT} within 30 s; see ${LOG_FILE}"
    return 1
}

# stop_started NAME RUNNING: stops the server in the pid file when `RUNNING PID` says it is
# still the one this script started, waits up to 5 s for it to go, and removes the pid file.
stop_started() {
    local name="$1" running="$2"
    if [[ ! -f "${PID_FILE}" ]]; then
        log "no pid file at ${PID_FILE}: nothing started by this script is running"
        return 0
    fi
    local pid
    pid="$(cat "${PID_FILE}")"
    if "${running}" "${pid}"; then
        kill "${pid}"
        for _ in $(seq 1 20); do
            kill -0 "${pid}" 2>/dev/null || break
            sleep 0.25
        done
        log "stopped ${name} (pid ${pid})"
    else
        # The pid is gone (or, where RUNNING checks more, was reused): never signal that one.
        log "${name} (pid ${pid}) was not running"
    fi
    rm -f "${PID_FILE}"
}
