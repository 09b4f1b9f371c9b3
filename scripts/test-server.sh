#!/usr/bin/env bash
# citeflow serve with the official `openai` Python client: builds the `citeflow` binary and
# the replaying upstream (crates/server/replay/examples/replay_upstream.rs), starts both on free
# loopback ports, and runs crates/server/tests/python with pytest (warnings are errors).
#
# Needs: python3 (3.9+) with the venv module, cargo. Installs `openai` and `pytest` (exact
# versions: crates/server/tests/python/requirements.txt) into target/venv-server. Idempotent:
# a second run reuses the venv and the cargo cache. Both servers are stopped on exit, whatever
# happens.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
# shellcheck source=venv.sh
source "$ROOT/scripts/venv.sh"
VENV="$(test_venv_path server)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
SHARED="${CITEFLOW_SHARED_DIR:-$(cd "$ROOT/.." && pwd)/shared}"
[ -d "$SHARED/fixtures/streams" ] || { echo "shared fixtures not found at $SHARED" >&2; exit 1; }
# shellcheck source=step.sh
source "$ROOT/scripts/step.sh"
# shellcheck source=debug-build.sh
source "$ROOT/scripts/debug-build.sh"

step "virtualenv $VENV: pip install -r crates/server/tests/python/requirements.txt"
# Exact versions, so that a run today and a run next month test the same client.
ensure_test_venv server

step "citeflow and the replaying upstream (scripts/debug-build.sh)"
debug_build

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# Waits for the first line of a server's stdout and prints it.
first_line() {
    local file="$1"
    for _ in $(seq 1 200); do
        if [ -s "$file" ]; then head -n1 "$file"; return 0; fi
        sleep 0.05
    done
    echo "server did not start: $file" >&2
    return 1
}

step "start the replaying upstream and citeflow serve; pytest crates/server/tests/python"
# The shared recordings, and re-timed copies of the OpenAI Responses ones (issue 39).
"$VENV/bin/python" crates/server/tests/python/recut.py "$SHARED/fixtures/streams" "$WORK/streams"
"$TARGET_DIR/debug/examples/replay_upstream" "$WORK/streams" > "$WORK/upstream.out" &
PIDS+=($!)
UPSTREAM="$(first_line "$WORK/upstream.out")"

CITEFLOW_LOG=warn "$TARGET_DIR/debug/citeflow" serve --upstream "$UPSTREAM" \
    --listen 127.0.0.1:0 --store "sqlite:$WORK/citeflow.db" --api-key test-key \
    > "$WORK/citeflow.out" &
PIDS+=($!)
CITEFLOW_URL="$(first_line "$WORK/citeflow.out" | sed 's/^citeflow listening on //')"

export CITEFLOW_URL CITEFLOW_API_KEY=test-key
"$VENV/bin/python" -m pytest -W error -q -p no:cacheprovider crates/server/tests/python
step_done
