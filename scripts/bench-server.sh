#!/usr/bin/env bash
# Load benchmark of citeflow serve (not a test): N concurrent streams straight from a replaying
# upstream, then through a pass-through proxy on the same stack (bytes copied, no work: the
# floor for any proxy here), then through citeflow (SQLite store), in one run. Prints a
# Markdown table: throughput ratio, per-chunk latency p50/p99 of each path and what it adds,
# CPU time per chunk of each process, and citeflow's resident memory per open stream. Each
# count runs with all streams starting together (every stream's chunk in the same instant:
# the worst case) and with starts spread evenly over one pace interval.
#
#   scripts/bench-server.sh [STREAMS] [PACE_MS] [MODEL]
#   defaults: 100,1000  20  smollm2-01.sse (200 chunks, about one token each)
#   BENCH_CITEFLOW=PATH measures another citeflow binary (an A/B run against an older build);
#   BENCH_STORE=memory|sqlite:PATH|redis://… picks its store.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
STREAMS="${1:-100,1000}"
PACE_MS="${2:-20}"
MODEL="${3:-smollm2-01.sse}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
SHARED="${CITEFLOW_SHARED_DIR:-$(cd "$ROOT/.." && pwd)/shared}"
[ -d "$SHARED/fixtures/streams" ] || { echo "shared fixtures not found at $SHARED" >&2; exit 1; }

cargo build --quiet --locked --release -p citeflow-cli
cargo build --quiet --locked --release -p citeflow-replay --example replay_upstream
cargo build --quiet --locked --release -p citeflow-server --example passthrough --example bench

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
first_line() {
    for _ in $(seq 1 200); do
        if [ -s "$1" ]; then head -n1 "$1"; return 0; fi
        sleep 0.05
    done
    echo "server did not start: $1" >&2
    return 1
}

CITEFLOW_REPLAY_STAMPS=1 "$TARGET_DIR/release/examples/replay_upstream" "$SHARED/fixtures/streams" "$PACE_MS" \
    > "$WORK/upstream.out" &
PIDS+=($!)
UPSTREAM_PID=$!
UPSTREAM="$(first_line "$WORK/upstream.out")"
"$TARGET_DIR/release/examples/passthrough" "$UPSTREAM" > "$WORK/passthrough.out" &
PASS_PID=$!
PIDS+=("$PASS_PID")
PASS="$(first_line "$WORK/passthrough.out")"
# BENCH_PERF=FILE records citeflow under `perf record` (its CPU column is then perf's own).
WRAP=()
[ -n "${BENCH_PERF:-}" ] && WRAP=(perf record -q --call-graph dwarf,16384 -F 300 -o "$BENCH_PERF" --)
CITEFLOW_LOG=warn "${WRAP[@]}" "${BENCH_CITEFLOW:-$TARGET_DIR/release/citeflow}" serve --upstream "$UPSTREAM" --listen 127.0.0.1:0 \
    --store "${BENCH_STORE:-sqlite:$WORK/citeflow.db}" --max-streams-per-key 100000 > "$WORK/citeflow.out" &
CITEFLOW_PID=$!
PIDS+=("$CITEFLOW_PID")
CITEFLOW="$(first_line "$WORK/citeflow.out" | sed 's/^citeflow listening on //')/v1"

echo "machine: $(nproc) cores, $(uname -sr); $(rustc --version)"
echo "model $MODEL, upstream pace ${PACE_MS} ms per chunk, citeflow store ${BENCH_STORE:-sqlite (WAL)}"
"$TARGET_DIR/release/examples/bench" "$UPSTREAM" "$UPSTREAM_PID" "$PASS" "$PASS_PID" \
    "$CITEFLOW" "$CITEFLOW_PID" "$MODEL" "$STREAMS" "$PACE_MS"
