#!/usr/bin/env bash
# Seeds the chat_chunk fuzz target's corpus with the recorded chat chunks of ../shared
# (each file: one choice byte, then the chunk's text).
set -euo pipefail
cd "$(dirname "$0")"
shared=${CITEFLOW_SHARED_DIR:-../../shared}
mkdir -p corpus/chat_chunk
n=0
for f in "$shared"/fixtures/streams/openai-*.chunks.txt "$shared"/fixtures/streams/perplexity-*.chunks.txt; do
  while IFS= read -r line; do
    case $line in "{"*) ;; *) continue ;; esac
    n=$((n + 1))
    { printf '\x0%d' $((n % 8)); printf '%s' "$line"; } > "corpus/chat_chunk/seed-$n"
  done < "$f"
done
echo "seeded $n chunks into fuzz/corpus/chat_chunk"
