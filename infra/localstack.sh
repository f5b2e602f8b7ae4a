#!/usr/bin/env bash
# LocalStack in host mode (no Docker) for the integration suite: `make test-localstack`.
#
#   bash infra/localstack.sh run [PYTEST ARGS]   set up, start, run tests/integration, stop
#   bash infra/localstack.sh setup|start|stop    the single steps
#   LOCALSTACK_PORT=4599 bash infra/localstack.sh run   another port (4566 is taken)
#
# LocalStack runs from its own virtual environment (.localstack/venv, pinned below) on
# Python 3.13, listens on 127.0.0.1:4566 only, keeps all its files under
# .localstack/run (FILESYSTEM_ROOT, host mode forced with OVERRIDE_IN_DOCKER=0), and is
# stopped by its own process group id (it ignores SIGTERM), after which .localstack/run
# is removed. The venv is kept for the next run.
set -euo pipefail
cd "$(dirname "$0")/.."

LOCALSTACK_VERSION=2026.3.0
# The known-working companions of localstack-core 2026.3 (newer cbor2/pyopenssl break it).
PINS=("localstack-core[runtime]==$LOCALSTACK_VERSION" "cbor2==5.9.0" "pyopenssl==24.3.0"
    "hypercorn==0.18.0")
PORT=${LOCALSTACK_PORT:-4566}
ENDPOINT="http://127.0.0.1:$PORT"
HOME_DIR=.localstack
VENV=$HOME_DIR/venv
RUN_DIR=$HOME_DIR/run
PID_FILE=$HOME_DIR/localstack.pid
LOG=$HOME_DIR/localstack.log
UV=.tools/bin/uv

setup() {
    [ -x "$UV" ] || make --no-print-directory "$UV"
    local stamp="$VENV/.pins"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${PINS[*]}" ]; then
        return 0
    fi
    rm -rf "$VENV"
    "$UV" venv --quiet --python "$(bash infra/python313.sh)" "$VENV"
    "$UV" pip install --quiet --python "$VENV/bin/python" "${PINS[@]}"
    echo "${PINS[*]}" > "$stamp"
}

healthy() {
    "$VENV/bin/python" - "$ENDPOINT" <<'PY'
import json, sys, urllib.request
try:
    with urllib.request.urlopen(f"{sys.argv[1]}/_localstack/health", timeout=2) as answer:
        sys.exit(0 if json.load(answer).get("services") else 1)
except Exception:
    sys.exit(1)
PY
}

start() {
    if healthy; then
        echo "something already answers on $ENDPOINT; stop it first" >&2
        return 1
    fi
    rm -rf "$RUN_DIR"
    mkdir -p "$RUN_DIR"
    # setsid: LocalStack and its helper processes share one process group, stopped together.
    OVERRIDE_IN_DOCKER=0 FILESYSTEM_ROOT="$PWD/$RUN_DIR" \
        GATEWAY_SERVER=hypercorn GATEWAY_LISTEN="127.0.0.1:$PORT" DNS_ADDRESS=0 \
        SKIP_SSL_CERT_DOWNLOAD=1 DISABLE_EVENTS=1 LOCALSTACK_TELEMETRY=0 \
        setsid "$VENV/bin/python" -m localstack.runtime.main > "$LOG" 2>&1 < /dev/null &
    echo $! > "$PID_FILE"
    disown  # stopped by stop(), not by this shell's job control (no "Killed" notice)
    local deadline=$((SECONDS + 120))
    until healthy; do
        if ! kill -0 "$(cat "$PID_FILE")" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
            echo "LocalStack did not come up; its log:" >&2
            tail -40 "$LOG" >&2
            stop
            return 1
        fi
        sleep 1
    done
    echo "LocalStack $LOCALSTACK_VERSION on $ENDPOINT (pid $(cat "$PID_FILE"))"
}

stop() {
    if [ -f "$PID_FILE" ]; then
        local pid
        pid="$(cat "$PID_FILE")"
        # SIGTERM is ignored by LocalStack's runtime: SIGKILL its own process group.
        kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 10))
        while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
        rm -f "$PID_FILE"
    fi
    rm -rf "$RUN_DIR"
}

run() {
    setup
    start
    trap stop EXIT
    local started=$SECONDS status=0
    # three workers on two cores: the two alarm tests (each minutes of mostly sleeping on
    # LocalStack's evaluation schedule) run beside each other and beside the rest of the suite
    AWS_ENDPOINT_URL="$ENDPOINT" .venv/bin/pytest tests/integration -p no:cacheprovider \
        -n 3 --dist loadgroup --durations=5 "$@" || status=$?
    echo "integration suite on LocalStack: $((SECONDS - started)) s"
    return $status
}

case "${1:-run}" in
    setup) setup ;;
    start) setup && start ;;
    stop) stop ;;
    run) shift || true; run "$@" ;;
    *) echo "usage: $0 run [pytest args] | setup | start | stop" >&2; exit 2 ;;
esac
