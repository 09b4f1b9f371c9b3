#!/usr/bin/env bash
# epub.js test (issue 22 §4): the real `epubjs` npm package, pinned to 0.3.93 (the version of
# the CFI oracle's epubjs_0_3_93 column; crates/epub/tests/epubjs/package-lock.json), in
# headless Chromium (Debian's chromium driven by playwright-core) resolves citeflow's
# epub.js-flavoured CFI of every non-whitespace text node of the seven fixture books (18,765)
# to that node (crates/epub/tests/epubjs/epubjs.test.mjs), and opens every passage's
# epub.js-flavoured range CFI (996 passages) at exactly the passage's text, and every sentence of
# the Japanese book's passages at exactly the sentence from its quote CFI (issue 43,
# Book::passage_range_cfi). The CFIs come from
# citeflow-epub's example `epubjs_cfis` as the workspace's `cargo test` builds it
# (scripts/debug-build.sh: no build of its own after that). The Rust side (our epub.js-flavoured CFIs
# equal the oracle's column) is `cargo test -p citeflow-epub` (tests/cfi_flavor.rs).
#
# Installs what is missing: Debian's chromium (apt-get) and the harness's npm packages
# (npm ci in crates/epub/tests/epubjs). Safe to run twice; prints its time.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
harness="crates/epub/tests/epubjs"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export CITEFLOW_SHARED_DIR="${CITEFLOW_SHARED_DIR:-$(cd "$root/.." && pwd)/shared}"
# shellcheck source=step.sh
source "$root/scripts/step.sh"
# shellcheck source=debug-build.sh
source "$root/scripts/debug-build.sh"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

step "tools: chromium, npm ci ($harness)"
if [ ! -x /usr/bin/chromium ]; then
  as_root apt-get update
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi
echo "node $(node --version), $(/usr/bin/chromium --version 2>/dev/null | head -n1)"
(cd "$harness" && npm ci --no-audit --no-fund)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT INT TERM

step "our CFIs of every text node, both flavours (example epubjs_cfis, scripts/debug-build.sh)"
debug_build
cfis="${CARGO_TARGET_DIR:-$root/target}/debug/examples/epubjs_cfis"
"$cfis" "$CITEFLOW_SHARED_DIR"/fixtures/epub/*.epub >"$work/nodes.jsonl"
"$cfis" --passages "$CITEFLOW_SHARED_DIR"/fixtures/epub/*.epub >"$work/passages.jsonl"
"$cfis" --sentences \
  "$CITEFLOW_SHARED_DIR"/fixtures/epub/kusamakura-japanese-vertical-writing.epub >"$work/sentences.jsonl"
wc -l <"$work/nodes.jsonl" | sed 's/^/text nodes: /'
wc -l <"$work/passages.jsonl" | sed 's/^/passages: /'
wc -l <"$work/sentences.jsonl" | sed 's/^/quoted sentences (kusamakura): /'

step "epub.js 0.3.93 in headless Chromium resolves them"
(cd "$harness" && CITEFLOW_EPUBJS_INPUT="$work/nodes.jsonl" CITEFLOW_EPUBJS_PASSAGES="$work/passages.jsonl" \
  CITEFLOW_EPUBJS_SENTENCES="$work/sentences.jsonl" \
  node --test --test-concurrency=1 --test-reporter=spec epubjs.test.mjs)

step_done
