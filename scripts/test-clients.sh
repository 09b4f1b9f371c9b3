#!/usr/bin/env bash
# The official clients against `citeflow serve`: Python `openai` (chat and responses) and
# `anthropic` (messages), npm `openai` and the AI SDK (`ai`'s useChat transport read with
# readUIMessageStream, `@ai-sdk/openai` streamText), all at exact versions, then the examples
# of examples/ (curl, Python openai and anthropic, Node openai and AI SDK), whose output must
# show the numbered text and the sources. Starts the replaying upstream (crates/server/replay/examples/replay_upstream.rs, fed
# by ../shared/fixtures/streams) and `citeflow serve --anthropic-upstream` on free loopback
# ports, and stops both on exit whatever happens.
#
# Needs: python3 (3.11) with venv, Node 20 with npm, cargo. Installs the Python clients
# (crates/server/tests/clients/requirements.txt) into target/venv-clients and the npm ones
# (package-lock.json) with npm ci into crates/server/tests/clients/node_modules and
# examples/node_modules. Builds the
# same debug binaries as scripts/test-server.sh (so one of the two builds, the other reuses).
# Safe to run twice.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
# shellcheck source=venv.sh
source "$ROOT/scripts/venv.sh"
VENV="$(test_venv_path clients)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
SHARED="${CITEFLOW_SHARED_DIR:-$(cd "$ROOT/.." && pwd)/shared}"
CLIENTS="crates/server/tests/clients"
[ -d "$SHARED/fixtures/streams" ] || { echo "shared fixtures not found at $SHARED" >&2; exit 1; }

# shellcheck source=step.sh
source "$ROOT/scripts/step.sh"
# shellcheck source=debug-build.sh
source "$ROOT/scripts/debug-build.sh"

step "install the Python clients (target/venv-clients) and the npm ones (npm ci)"
ensure_test_venv clients
for dir in "$CLIENTS" examples; do
    if ! (cd "$dir" && [ -d node_modules ] && npm ls --silent >/dev/null 2>&1); then
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    fi
done

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

step "start the replaying upstream and citeflow serve on loopback"
"$TARGET_DIR/debug/examples/replay_upstream" "$SHARED/fixtures/streams" > "$WORK/upstream.out" &
PIDS+=($!)
UPSTREAM="$(first_line "$WORK/upstream.out")"
KEY="sk-citeflow-test"
CITEFLOW_LOG=warn "$TARGET_DIR/debug/citeflow" serve --upstream "$UPSTREAM" \
    --anthropic-upstream "$UPSTREAM" --listen 127.0.0.1:0 --store memory --api-key "$KEY" \
    > "$WORK/citeflow.out" 2> "$WORK/citeflow.err" &
PIDS+=($!)
PROXY="$(first_line "$WORK/citeflow.out" | sed 's/^citeflow listening on //')"
echo "upstream $UPSTREAM, citeflow $PROXY"
# The same recordings paced (15 ms before each event) behind a citeflow serve whose streams
# send a keep-alive comment after 3 ms of silence (check_clients.py's keep_alive).
"$TARGET_DIR/debug/examples/replay_upstream" "$SHARED/fixtures/streams" 15 > "$WORK/upstream-paced.out" &
PIDS+=($!)
UPSTREAM_PACED="$(first_line "$WORK/upstream-paced.out")"
CITEFLOW_LOG=warn "$TARGET_DIR/debug/citeflow" serve --upstream "$UPSTREAM_PACED" \
    --anthropic-upstream "$UPSTREAM_PACED" --listen 127.0.0.1:0 --store memory --api-key "$KEY" \
    --sse-keep-alive-ms 3 > "$WORK/citeflow-paced.out" 2> "$WORK/citeflow-paced.err" &
PIDS+=($!)
PROXY_PACED="$(first_line "$WORK/citeflow-paced.out" | sed 's/^citeflow listening on //')"
export CITEFLOW_PROXY="$PROXY" CITEFLOW_PROXY_PACED="$PROXY_PACED" CITEFLOW_KEY="$KEY" CITEFLOW_SHARED_DIR="$SHARED"
export CITEFLOW_MODEL_RESPONSES="openai-web-search-tool.1.chunks.txt"
export CITEFLOW_MODEL_MESSAGES="anthropic-web-search-tool.1.chunks.txt"

status=0
run() {
    local name="$1"
    shift
    step "$name"
    if ! "$@"; then
        echo "FAILED: $name" >&2
        status=1
    fi
}

run "Python openai $(grep '^openai==' "$CLIENTS/requirements.txt") and anthropic $(grep '^anthropic==' "$CLIENTS/requirements.txt")" \
    "$VENV/bin/python" -W error "$CLIENTS/check_clients.py"
run "npm openai, ai, @ai-sdk/openai (node --test)" \
    bash -c "cd '$CLIENTS' && node --test --test-reporter=spec clients.test.mjs"

# The examples of examples/, as a user runs them, against the same proxy: each output must
# show the numbered text and its sources.
# Runs an example into a file, then checks that every expected line fragment is in it.
example() {
    local name="$1" out="$WORK/example.out"
    shift
    local -a expect=()
    while [ "$1" != "--" ]; do expect+=("$1"); shift; done
    shift
    step "examples/$name"
    if ! "$@" > "$out" 2>&1; then
        tail -c 4000 "$out" >&2
        echo "FAILED: examples/$name exited non-zero" >&2
        status=1
        return
    fi
    for want in "${expect[@]}"; do
        if ! grep -qF -- "$want" "$out"; then
            tail -c 4000 "$out" >&2
            echo "FAILED: examples/$name does not show: $want" >&2
            status=1
            return
        fi
    done
    echo "ok (${#expect[@]} expected fragments shown)"
}
export CITEFLOW_URL="$PROXY" CITEFLOW_MODEL_CHAT="chat-demo"
PARIS="https://en.wikipedia.org/wiki/Paris"
SEINE="https://en.wikipedia.org/wiki/Seine"
CHAT_TEXT="Paris is the capital of France [1]. The Seine flows through it [2] and its museums draw millions [1]."
example curl.sh \
    '"content":"Paris is the capital of France "' '"content":"[1]. The Seine flows through it [2]"' \
    "{\"type\":\"url_citation\",\"url_citation\":{\"end_index\":34,\"start_index\":31,\"title\":\"Paris\",\"url\":\"$PARIS\"}}" \
    '"type":"done"' '"end_index":' '"type":"web_search_result_location"' '"id":"replay"' \
    -- bash examples/curl.sh
example openai_client.py \
    "chat: $CHAT_TEXT" "  [1] at 31: $PARIS" "  [2] at 63: $SEINE" "  [1] at 97: $PARIS" \
    "  [1] Paris $PARIS" "  [2] The Seine $SEINE" "responses: " "  [7] https://" \
    -- "$VENV/bin/python" -W error examples/openai_client.py
example anthropic_client.py \
    "Liquid Glass redesign to the iPhone.[4]" \
    "  [4] ← web_search_result_location: https://9to5mac.com/2025/09/22/ios-26-1-beta-1/" \
    "  [1] The all-new Apple Ginza opens this Friday" "  [4] Apple releases first iOS 26.1" \
    -- "$VENV/bin/python" -W error examples/anthropic_client.py
example ai-sdk.mjs \
    "chat: $CHAT_TEXT" "  annotation [2] -> $SEINE" "  [1] Paris" "  [2] The Seine" \
    "  source-url 7: " "ui message text: " "streamText: " "  source https://" \
    -- node examples/ai-sdk.mjs

if [ "$status" -ne 0 ]; then
    echo "--- citeflow serve stderr" >&2
    tail -n 40 "$WORK/citeflow.err" >&2 || true
    exit "$status"
fi
step_done
