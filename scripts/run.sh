#!/usr/bin/env bash
# The main job on the embedded defaults: builds the `citeflow` binary and streams a recorded
# answer through it. Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED="${CITEFLOW_SHARED_DIR:-$(cd .. && pwd)/shared}"
cargo build --release --locked -p citeflow-cli
BIN=target/release/citeflow

echo "== An answer streamed in five chunks, markers cut across them"
"$BIN" render --sources examples/sources.json --input jsonl < examples/answer.jsonl

if [ -f "$SHARED/fixtures/streams/perplexity-text.chunks.txt" ]; then
  echo
  echo "== A recorded Perplexity stream: [n] ranks into its citations array"
  "$BIN" render --input jsonl --rank < "$SHARED/fixtures/streams/perplexity-text.chunks.txt"
fi
