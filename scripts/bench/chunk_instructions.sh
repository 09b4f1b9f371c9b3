#!/usr/bin/env bash
# User-space instructions per upstream chunk of a proxy (not a test; issue 45 item 3): the
# proxy runs under valgrind's callgrind, serves one warm-up stream, its counters are zeroed,
# then STREAMS streamed chat answers of `smollm2-01.sse` (200 chunks each, two sources) go
# through it at once from the replaying upstream (5 ms a chunk); the instructions it ran over
# them, divided by the upstream's chunks. An instruction count does not move with the
# machine's load (other builds on these 2 cores make the CPU-time A/B of
# scripts/bench-server.sh swing by ±30%), so two builds compare on it at any time; it does not
# see the kernel, cache misses or lock contention, which the CPU-time benchmark does.
#
#   scripts/bench/chunk_instructions.sh BINARY|passthrough [STREAMS]
#   BINARY: a citeflow binary (`serve --store memory`); `passthrough`: the pass-through proxy
#   example (crates/server/examples/passthrough.rs), the floor. STREAMS: default 20.
#   CG_KEEP=DIR keeps the callgrind profile there (read it with `callgrind_annotate --inclusive=yes`).
#   CHUNK_ROUTE=messages|responses measures the Messages or Responses route instead of chat
#   completions: the same answer as that API's events (scripts/bench/named_stream.py), divided by
#   the upstream's events.
#   Needs valgrind and curl; builds the replaying upstream and the pass-through proxy in release.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
WHO="${1:?BINARY or passthrough}"
N="${2:-20}"
T="${CARGO_TARGET_DIR:-$ROOT/target}/release"
SHARED="${CITEFLOW_SHARED_DIR:-$(cd "$ROOT/.." && pwd)/shared}"
[ -f "$SHARED/fixtures/streams/smollm2-01.sse" ] || { echo "shared fixtures not found at $SHARED" >&2; exit 1; }
command -v valgrind > /dev/null || { echo "valgrind not found" >&2; exit 1; }
cargo build --quiet --locked --release -p citeflow-replay --example replay_upstream
cargo build --quiet --locked --release -p citeflow-server --example passthrough

W="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$W"
}
trap cleanup EXIT INT TERM
first_line() {
    for _ in $(seq 1 1200); do
        if [ -s "$1" ]; then head -n1 "$1"; return 0; fi
        sleep 0.05
    done
    echo "did not start: $1" >&2
    return 1
}

ROUTE="${CHUNK_ROUTE:-chat}"
STREAMS_DIR="$SHARED/fixtures/streams"
MODEL=smollm2-01.sse
if [ "$ROUTE" != chat ]; then
    [ "$WHO" = passthrough ] && { echo "the pass-through proxy serves chat completions only" >&2; exit 1; }
    STREAMS_DIR="$W/streams"
    MODEL="bench-$ROUTE.sse"
    mkdir -p "$STREAMS_DIR"
    python3 "$ROOT/scripts/bench/named_stream.py" "$ROUTE" "$SHARED/fixtures/streams/smollm2-01.sse" \
        "$STREAMS_DIR/$MODEL"
fi
CHUNKS=200  # text chunks a stream, on every route
"$T/examples/replay_upstream" "$STREAMS_DIR" 5 > "$W/up.out" &
PIDS+=($!)
UP="$(first_line "$W/up.out")"
if [ "$WHO" = passthrough ]; then
    valgrind --tool=callgrind --callgrind-out-file="$W/cg.%p" "$T/examples/passthrough" "$UP" \
        > "$W/srv.out" 2> "$W/vg.err" &
else
    CITEFLOW_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$W/cg.%p" "$WHO" serve \
        --upstream "$UP" --anthropic-upstream "$UP" --listen 127.0.0.1:0 --store memory --max-streams-per-key 100000 \
        > "$W/srv.out" 2> "$W/vg.err" &
fi
SRV=$!
PIDS+=("$SRV")
URL="$(first_line "$W/srv.out" | sed 's/^citeflow listening on //')"
case "$URL" in */v1) ;; *) URL="$URL/v1" ;; esac
SOURCES='"sources":[{"id":"source_3"},{"id":"source_7"}]'
case "$ROUTE" in
    chat) PATH_="chat/completions"
        BODY="{\"model\":\"$MODEL\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],$SOURCES}" ;;
    messages) PATH_="messages"
        BODY="{\"model\":\"$MODEL\",\"max_tokens\":512,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],$SOURCES}" ;;
    responses) PATH_="responses"
        BODY="{\"model\":\"$MODEL\",\"stream\":true,\"input\":\"q\",$SOURCES}" ;;
    *) echo "CHUNK_ROUTE: chat, messages or responses" >&2; exit 1 ;;
esac
post() { curl -sfN -X POST -H 'content-type: application/json' -d "$BODY" "$URL/$PATH_"; }
post > "$W/warm.txt"
sleep 1
callgrind_control -z "$SRV" > /dev/null 2>&1
CLIENTS=()
for i in $(seq 1 "$N"); do
    post > "$W/s$i.txt" &
    CLIENTS+=($!)
done
wait "${CLIENTS[@]}"
sleep 0.5
callgrind_control -d "$SRV" > /dev/null 2>&1
for _ in $(seq 1 100); do
    DUMP="$(ls "$W"/cg.*.* 2>/dev/null | head -n1 || true)"
    [ -n "$DUMP" ] && grep -q '^totals:\|^summary:' "$DUMP" && break
    sleep 0.1
done
IR="$(grep -h '^totals:\|^summary:' "$DUMP" | tail -n1 | awk '{print $2}')"
EVENTS="$(cat "$W"/s*.txt | grep -c '^data: ' || true)"
[ -n "${CG_KEEP:-}" ] && mkdir -p "$CG_KEEP" && cp "$DUMP" "$CG_KEEP/"
python3 -c 'import sys; ir, n, ev = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]); print(f"{sys.argv[4]} ({sys.argv[6]}): {n} streams, {ev} events out, {ir} instructions, {ir / (n * int(sys.argv[5])):.0f} per upstream chunk")' \
    "$IR" "$N" "$EVENTS" "$WHO" "$CHUNKS" "$ROUTE"
