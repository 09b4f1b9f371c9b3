#!/usr/bin/env bash
# The files a chat chunk passes through (not a test; issue 44 item 7): a debug `citeflow`
# built with `-C instrument-coverage` serves one streamed chat answer of 200 content chunks
# (`smollm2-01.sse` from the shared recordings, through the replaying upstream, in-memory
# store, two sources), then stops; the server source files where some line ran at least 200
# times are the ones every chunk runs code in. Prints them (with the most runs of a line in
# each) and their count.
#
#   scripts/bench/chunk_path.sh [TREE]
#   TREE: the checkout measured (default: this one), e.g. a `git worktree` of an older commit,
#   so that before and after are counted the same way.
#   CARGO_TARGET_DIR: where the replaying upstream is built; the instrumented citeflow goes to
#   its subfolder `chunk-path` (its own flags, so it never rebuilds the ordinary one).
#   CHUNK_PATH_MIN: the runs that count (default 200).
#   CHUNK_PATH_ANSWER=FILE keeps the answer's SSE there (to compare two trees' bytes).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TREE="$(cd "${1:-$HERE}" && pwd)"
MIN="${CHUNK_PATH_MIN:-200}"
TARGET_DIR="${CARGO_TARGET_DIR:-$TREE/target}"
COV_DIR="$TARGET_DIR/chunk-path"
SHARED="${CITEFLOW_SHARED_DIR:-$(cd "$HERE/.." && pwd)/shared}"
[ -f "$SHARED/fixtures/streams/smollm2-01.sse" ] || { echo "shared fixtures not found at $SHARED" >&2; exit 1; }
TOOLS="$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin"
[ -x "$TOOLS/llvm-profdata" ] || { echo "no llvm-profdata: rustup component add llvm-tools-preview" >&2; exit 1; }

cd "$TREE"
RUSTFLAGS="-C instrument-coverage" CARGO_TARGET_DIR="$COV_DIR" \
    cargo build --quiet --locked -p citeflow-cli
CARGO_TARGET_DIR="$TARGET_DIR" cargo build --quiet --locked -p citeflow-replay --example replay_upstream

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
first_line() {
    for _ in $(seq 1 400); do
        if [ -s "$1" ]; then head -n1 "$1"; return 0; fi
        sleep 0.05
    done
    echo "server did not start: $1" >&2
    return 1
}

"$TARGET_DIR/debug/examples/replay_upstream" "$SHARED/fixtures/streams" > "$WORK/upstream.out" &
PIDS+=($!)
UPSTREAM="$(first_line "$WORK/upstream.out")"
LLVM_PROFILE_FILE="$WORK/citeflow-%p.profraw" CITEFLOW_LOG=warn "$COV_DIR/debug/citeflow" serve \
    --upstream "$UPSTREAM" --listen 127.0.0.1:0 --store memory > "$WORK/citeflow.out" &
CITEFLOW_PID=$!
CITEFLOW="$(first_line "$WORK/citeflow.out" | sed 's/^citeflow listening on //')"

curl -sS --fail -N "$CITEFLOW/v1/chat/completions" -H 'content-type: application/json' \
    -d '{"model": "smollm2-01.sse", "stream": true, "messages": [{"role": "user", "content": "q"}],
         "sources": [{"id": "source_3"}, {"id": "source_7"}]}' > "$WORK/answer.sse"
CHUNKS="$(grep -c '"content":' "$WORK/answer.sse" || true)"
[ -n "${CHUNK_PATH_ANSWER:-}" ] && cp "$WORK/answer.sse" "$CHUNK_PATH_ANSWER"
# A clean exit writes the profile.
kill -TERM "$CITEFLOW_PID"
wait "$CITEFLOW_PID" || true

"$TOOLS/llvm-profdata" merge -sparse "$WORK"/citeflow-*.profraw -o "$WORK/citeflow.profdata"
"$TOOLS/llvm-cov" export -format=lcov -instr-profile="$WORK/citeflow.profdata" \
    "$COV_DIR/debug/citeflow" > "$WORK/lcov.info"

echo "tree: $TREE ($(git -C "$TREE" rev-parse --short HEAD)); answer chunks with content: $CHUNKS"
echo "server files where a line ran >= $MIN times (most runs of a line):"
awk -v min="$MIN" -v root="$TREE/crates/server/src/" '
    /^SF:/ { file = substr($0, 4); next }
    /^DA:/ {
        if (index(file, root) != 1) next
        split(substr($0, 4), f, ",")
        if (f[2] + 0 > most[file] + 0) most[file] = f[2] + 0
    }
    END {
        n = 0
        for (k in most) if (most[k] >= min) printf "  %-40s %d\n", substr(k, length(root) + 1), most[k]
    }' "$WORK/lcov.info" | sort > "$WORK/files.txt"
cat "$WORK/files.txt"
echo "count: $(wc -l < "$WORK/files.txt")"
