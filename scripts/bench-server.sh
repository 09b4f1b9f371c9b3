#!/usr/bin/env bash
# Load benchmark of citeflow serve (not a test): N concurrent streams straight from a replaying
# upstream, then through a pass-through proxy on the same stack (bytes copied, no work: the
# floor for any proxy here), with the SQLite store also through that proxy appending every
# event to citeflow's SQLite store before sending it (the floor of a proxy with the same
# durable log), then through citeflow (SQLite store), in one run. Prints a
# Markdown table: throughput ratio, per-chunk latency p50/p99 of each path and what it adds,
# CPU time per chunk of each process, and citeflow's resident memory per open stream. Each
# count runs with all streams starting together (every stream's chunk in the same instant:
# the worst case) and with starts spread evenly over one pace interval.
#
#   scripts/bench-server.sh [STREAMS] [PACE_MS] [MODEL]
#   defaults: 100,1000  20  smollm2-01.sse (200 chunks, about one token each)
#   BENCH_CITEFLOW=PATH measures another citeflow binary (an A/B run against an older build);
#   BENCH_STORE=memory|sqlite:PATH|redis://… picks its store; BENCH_PERF=FILE records citeflow
#   under `perf record` (BENCH_PERF_EVENTS replaces its default `-F 300`, e.g. with
#   `-e syscalls:sys_enter_futex` to see where those calls come from); BENCH_SYSCALLS=DIR
#   counts system calls (see below);
#   BENCH_PIN=1 pins the upstream and the load generator to CPU 0 and the proxy under test (the
#   pass-through proxy, then citeflow) to CPU 1, so that neither side waits for the other's run
#   queue (issue 17 allows it; the figures then say how the server does on one core of its own);
#   BENCH_ROUNDS=R runs the pass-through proxy and citeflow R times in turn and gives the
#   round with the median CPU ratio (and every round's). At the end, the CPU time of each of
#   citeflow's threads over the whole run.
#   BENCH_LITELLM=VENV adds a peer: the LiteLLM proxy of that virtualenv (scripts/bench-litellm.sh
#   installs it) in front of the same upstream, one worker, `drop_params: true`, measured by the
#   same load client after citeflow in each round: its row in the table and a `peer …` line (CPU
#   per chunk of its processes, the share of the offered load it kept up with, memory per open
#   stream, against citeflow and the pass-through proxy of the same round). If it does not start,
#   a `skipped: …` line says so and the rest runs without it.
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
cargo build --quiet --locked --release -p citeflow-store-sqlite --example append_floor --example append_cost

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    # The LiteLLM proxy's workers, if it forked any, then every process this script started.
    [ -n "${LITELLM_PID:-}" ] && pkill -P "$LITELLM_PID" 2>/dev/null || true
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

LOAD=()
SERVER=()
if [ -n "${BENCH_PIN:-}" ]; then
    LOAD=(taskset -c 0)
    SERVER=(taskset -c 1)
fi
CITEFLOW_REPLAY_STAMPS=1 "${LOAD[@]}" "$TARGET_DIR/release/examples/replay_upstream" "$SHARED/fixtures/streams" "$PACE_MS" \
    > "$WORK/upstream.out" &
PIDS+=($!)
UPSTREAM_PID=$!
UPSTREAM="$(first_line "$WORK/upstream.out")"
"${SERVER[@]}" "$TARGET_DIR/release/examples/passthrough" "$UPSTREAM" > "$WORK/passthrough.out" &
PASS_PID=$!
PIDS+=("$PASS_PID")
PASS="$(first_line "$WORK/passthrough.out")"
# With the SQLite store (the default), a second pass-through proxy that appends every SSE event
# to citeflow's own SQLite store before it sends it: the floor of a proxy that keeps the same
# durable log (`examples/passthrough.rs`). Each round runs it after the plain one.
DURABLE=()
if [ -z "${BENCH_STORE:-}" ]; then
    "${SERVER[@]}" "$TARGET_DIR/release/examples/passthrough" "$UPSTREAM" --log "$WORK/durable.db" > "$WORK/durable.out" &
    DURABLE_PID=$!
    PIDS+=("$DURABLE_PID")
    DURABLE=("$(first_line "$WORK/durable.out")" "$DURABLE_PID")
fi
# BENCH_PERF=FILE records citeflow under `perf record` (its CPU column is then perf's own).
WRAP=()
[ -n "${BENCH_PERF:-}" ] && WRAP=(perf record -q --call-graph dwarf,16384 ${BENCH_PERF_EVENTS:--F 300} -o "$BENCH_PERF" --)
CITEFLOW_LOG=warn "${SERVER[@]}" "${WRAP[@]}" "${BENCH_CITEFLOW:-$TARGET_DIR/release/citeflow}" serve --upstream "$UPSTREAM" --listen 127.0.0.1:0 \
    --store "${BENCH_STORE:-sqlite:$WORK/citeflow.db}" --max-streams-per-key 100000 > "$WORK/citeflow.out" &
CITEFLOW_PID=$!
PIDS+=("$CITEFLOW_PID")
CITEFLOW="$(first_line "$WORK/citeflow.out" | sed 's/^citeflow listening on //')/v1"

# BENCH_LITELLM=VENV: the LiteLLM proxy pointed at the same upstream (every model name passed
# through to it as an OpenAI-compatible model), one worker, drop_params. Without a master key it
# refuses to start unless told that this is meant; its cost map is read from its own copy (it
# would try the internet first). Ready when /health/liveliness answers.
PEER=""
if [ -n "${BENCH_LITELLM:-}" ]; then
    LITELLM_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    printf '%s\n' 'model_list:' '  - model_name: "*"' '    litellm_params:' '      model: "openai/*"' \
        "      api_base: \"$UPSTREAM\"" '      api_key: unused' 'litellm_settings:' '  drop_params: true' \
        > "$WORK/litellm.yaml"
    LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY=true LITELLM_LOCAL_MODEL_COST_MAP=True \
        "${SERVER[@]}" "$BENCH_LITELLM/bin/litellm" --config "$WORK/litellm.yaml" --host 127.0.0.1 \
        --port "$LITELLM_PORT" --num_workers 1 > "$WORK/litellm.log" 2>&1 &
    LITELLM_PID=$!
    PIDS+=("$LITELLM_PID")
    LITELLM_VERSION="$("$BENCH_LITELLM/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))')"
    # Up to 300 s: its imports take a while (58 s at load average 12 on 2 cores).
    if python3 -c '
import os, sys, time, urllib.request
for _ in range(3000):
    try:
        os.kill(int(sys.argv[2]), 0)
    except OSError:
        sys.exit(1)
    try:
        urllib.request.urlopen(sys.argv[1], timeout=2).read()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)' "http://127.0.0.1:$LITELLM_PORT/health/liveliness" "$LITELLM_PID"; then
        PEER="litellm http://127.0.0.1:$LITELLM_PORT/v1 $LITELLM_PID"
    else
        echo "skipped: the LiteLLM proxy $LITELLM_VERSION ($BENCH_LITELLM) did not start; the end of its log:"
        tail -n 5 "$WORK/litellm.log" | sed 's/^/    /'
    fi
fi

# BENCH_SYSCALLS=DIR counts the system calls of the pass-through proxy and of citeflow over the
# whole run (perf tracepoints: all of them, then the ones that matter here one by one) into
# DIR/passthrough.txt and DIR/citeflow.txt.
COUNTERS=()
if [ -n "${BENCH_SYSCALLS:-}" ]; then
    mkdir -p "$BENCH_SYSCALLS"
    EVENTS=(-e raw_syscalls:sys_enter)
    for s in writev recvfrom epoll_wait futex pwrite64 pread64 fcntl fdatasync; do
        EVENTS+=(-e "syscalls:sys_enter_$s")
    done
    for who in passthrough:$PASS_PID citeflow:$CITEFLOW_PID; do
        perf stat "${EVENTS[@]}" -p "${who#*:}" -o "$BENCH_SYSCALLS/${who%%:*}.txt" &
        COUNTERS+=($!)
    done
fi
echo "machine: $(nproc) cores, $(uname -sr); $(rustc --version)"
echo "model $MODEL, upstream pace ${PACE_MS} ms per chunk, citeflow store ${BENCH_STORE:-sqlite (WAL)}${BENCH_PIN:+; upstream and load generator pinned to CPU 0, the proxy under test to CPU 1}"
[ -z "$PEER" ] || echo "the peer: LiteLLM proxy $LITELLM_VERSION ($("$BENCH_LITELLM/bin/python" --version)), one worker, drop_params: true, in front of the same upstream"
BENCH_PEER="$PEER" "${LOAD[@]}" "$TARGET_DIR/release/examples/bench" "$UPSTREAM" "$UPSTREAM_PID" "$PASS" "$PASS_PID" \
    "$CITEFLOW" "$CITEFLOW_PID" "$MODEL" "$STREAMS" "$PACE_MS" "${DURABLE[@]}" | tee "$WORK/bench.out"
for pid in "${COUNTERS[@]}"; do kill -INT "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
# Where citeflow's CPU went over the whole run, by thread name (seconds of user + system time).
echo
echo "citeflow CPU by thread over the whole run:"
for t in /proc/"$CITEFLOW_PID"/task/*; do
    [ -r "$t/stat" ] || continue
    # Fields after the parenthesised name: utime is the 12th, stime the 13th.
    name="$(cat "$t/comm")"
    read -r -a f <<< "$(sed 's/^.*) //' "$t/stat")"
    echo "$name ${f[11]} ${f[12]}"
done | awk -v hz="$(getconf CLK_TCK)" '{cpu[$1] += ($2 + $3) / hz} END {for (n in cpu) printf "  %-28s %7.2f s\n", n, cpu[n]}' | sort -k2 -rn
# With the SQLite store: the floor of its durable append, SQLite alone (no channel, job, reply,
# index or tail) appending rows of the size citeflow logged in this run, as a ratio against the
# pass-through proxy's CPU per chunk of the first ratio line. `append_floor` says how.
if [ -z "${BENCH_STORE:-}" ] && [ -s "$WORK/citeflow.db" ]; then
    BYTES="$(python3 -c "import sqlite3,sys; print(round(sqlite3.connect(sys.argv[1]).execute('SELECT avg(length(data)) FROM event_log').fetchone()[0] or 300))" "$WORK/citeflow.db")"
    PASS_US="$(grep -m1 '^ratio ' "$WORK/bench.out" | sed -E 's/.*\(([0-9.]+) \/ ([0-9.]+) µs\).*/\2/')"
    echo
    echo "SQLite alone, 200,000 rows of $BYTES bytes (the average event citeflow logged) from 1000 streams:"
    "$TARGET_DIR/release/examples/append_floor" 200000 "$BYTES" 1000 1,4,16,64 | tee "$WORK/floor.md"
    echo
    awk -F'|' -v pass="$PASS_US" '$2 + 0 == 16 {
        printf "floor SQLite append alone, 16 rows per commit: %.2f µs per row, %.2f× the pass-through proxy'"'"'s CPU per chunk (%s µs)\n", $5, $5 / pass, pass }' "$WORK/floor.md"
    # The store itself at this run's pace, without the proxy (`append_cost`: appends sent each
    # millisecond, so about 50 share a commit where the proxy's writer gathers 200 µs): what it
    # adds to SQLite's own work (the job, the reply, the table of running streams, the tail),
    # and its WAL at the end.
    N="${STREAMS%%,*}"
    "$TARGET_DIR/release/examples/append_cost" "$N" "$PACE_MS" "$BYTES" 6 | tee "$WORK/cost.txt"
    sed -E 's/.*store threads ([0-9.]+), the appending thread ([0-9.]+);.*WAL file ([0-9.]+ MB).*/\1 \2 \3/' "$WORK/cost.txt" |
        awk -v pass="$PASS_US" '{ printf "store SQLite store alone at this pace: %.2f µs per append in its threads (%.2f× the pass-through proxy'"'"'s CPU per chunk), %.2f µs in the appending thread; WAL file %s %s at the end\n", $1, $1 / pass, $2, $3, $4 }'
fi
