#!/usr/bin/env bash
# Browser tests of the chat page that `citeflow serve` serves at `GET /`: real headless
# Chromium (Debian's `chromium`, driven by npm `playwright-core`) against `citeflow serve` and a
# replaying OpenAI-style upstream (crates/server/tests/browser/upstream.mjs), both on free
# loopback ports, started here and stopped by a trap; citeflow serve gets a fresh book index
# with a fixture EPUB ingested at start-up (--index, --book). The tests save screenshots into
# target/screenshots/ (CITEFLOW_BLESS=1: into docs/screenshots/, the docs' copies; review and
# commit them).
#
# Installs what is missing: Debian's chromium and a CJK font (fonts-wqy-microhei, so Japanese
# and Chinese render in the screenshots) with apt-get, and the test project's npm packages
# (npm ci in crates/server/tests/browser). Builds `citeflow` (scripts/debug-build.sh, the
# workspace's debug build); the page's WASM for client-side rendering is compiled into it (vendored in
# crates/server/assets/wasm, checked by scripts/test-install.sh). Safe to run twice.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tests="crates/server/tests/browser"
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
export CITEFLOW_SHARED_DIR="${CITEFLOW_SHARED_DIR:-$(cd "$root/.." && pwd)/shared}"

# shellcheck source=step.sh
source "$root/scripts/step.sh"
# shellcheck source=debug-build.sh
source "$root/scripts/debug-build.sh"
# shellcheck source=browser-env.sh
source "$root/scripts/browser-env.sh"

step "tools: chromium, a CJK font, npm ci ($tests)"
ensure_browser

target_dir="$(cargo metadata --format-version 1 --no-deps \
  | node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).target_directory))')"

step "build citeflow"
debug_build
export CITEFLOW_BIN="$target_dir/debug/citeflow"

step "start the replaying upstream and citeflow serve on free loopback ports"
work="$(mktemp -d)"
upstream_pid=""
serve_pid=""
cleanup() {
  [ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null || true
  [ -n "$upstream_pid" ] && kill "$upstream_pid" 2>/dev/null && wait "$upstream_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

node "$tests/upstream.mjs" >"$work/upstream.out" 2>&1 &
upstream_pid=$!
upstream="$(wait_for_line "$work/upstream.out" 'http://127\.0\.0\.1:[0-9]+/v1')"
# A fresh book index with alice.epub ingested at start-up, for the book picker's test.
CITEFLOW_LOG=warn "$CITEFLOW_BIN" serve --listen 127.0.0.1:0 --upstream "$upstream" \
  --anthropic-upstream "$upstream" --store memory \
  --index "$work/index" --book "$CITEFLOW_SHARED_DIR/fixtures/epub/alice.epub" \
  >"$work/serve.out" 2>"$work/serve.err" &
serve_pid=$!
base="$(wait_for_line "$work/serve.out" 'http://127\.0\.0\.1:[0-9]+')"
grep '^citeflow:' "$work/serve.err" || true
echo "upstream $upstream, citeflow $base"

step "browser tests (headless Chromium)"
status=0
(cd "$tests" && CITEFLOW_WEB_BASE="$base" CITEFLOW_WEB_UPSTREAM="$upstream" \
  node --test --test-concurrency=1 --test-reporter=spec web.test.mjs) || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- citeflow serve stderr" >&2
  tail -n 50 "$work/serve.err" >&2 || true
  exit "$status"
fi
shots="${CARGO_TARGET_DIR:-target}/screenshots"
[ -z "${CITEFLOW_BLESS:-}" ] || shots=docs/screenshots
ls -l "$shots"/*.png
step_done
